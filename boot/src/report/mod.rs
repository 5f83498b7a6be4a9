//! What the runner shows and writes once boots have run: the progress line while they run,
//! SVG charts, the HTML report, and the traced side-by-side tables of the Linux twin.

pub mod compare_html;
pub mod escape;
pub mod html;
pub mod svg;
pub mod twin_traced;
