//! Unit tests of the agent's core, and of the launch path against the fake ports:
//! no root, no files but temp dirs, exact counts of each effect.

pub(crate) mod env;

mod admission;
mod ends;
mod launch_path;
mod registration;
