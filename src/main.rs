// A snapshot of a large cluster is millions of small allocations (names, labels, owners);
// mimalloc makes building and freeing them markedly cheaper than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // Installed as kubectl-descheduler, the binary is a kubectl plugin.
    if descheduler::kubectl::started_as_plugin(std::env::args_os().next().as_deref()) {
        return descheduler::kubectl::main(std::env::args_os());
    }
    descheduler::cli::main()
}
