//! The page frame allocator's pure parts: the buddy allocator of one node, the per-CPU page
//! list protocol in front of it (with its shuttle model checks), and the section -> node map.

pub mod buddy;
pub mod nodemap;
pub mod pcp;
#[cfg(test)]
mod pcp_model;
