//! `bulkhead-stepd JOB_DIR`: a job's supervisor, started by `bulkhead-agent` (see
//! `bulkhead_agent::stepd`).

fn main() {
    std::process::exit(bulkhead_agent::stepd::main());
}
