//! The page frame allocator's pure parts: the buddy allocator of one node, the per-CPU page
//! list protocol in front of it (with its shuttle model checks), the pfn -> node map, and the
//! vmemmap's layout.

pub mod buddy;
pub mod nodemap;
pub mod pcp;
#[cfg(test)]
mod pcp_model;
pub mod vmemmap;
