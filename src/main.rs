// A snapshot of a large cluster is millions of small allocations (names, labels, owners);
// mimalloc makes building and freeing them markedly cheaper than the system allocator. The
// wrapper (no limit) counts the bytes live through it: `descheduler_heap_live_bytes`.
#[global_allocator]
static GLOBAL: cap::Cap<mimalloc::MiMalloc> = cap::Cap::new(mimalloc::MiMalloc, usize::MAX);

fn main() -> std::process::ExitCode {
    descheduler::metrics::count_live_heap_with(|| GLOBAL.allocated() as u64);
    // Installed as kubectl-descheduler, the binary is a kubectl plugin.
    if descheduler::kubectl::started_as_plugin(std::env::args_os().next().as_deref()) {
        return descheduler::kubectl::main(std::env::args_os());
    }
    descheduler::cli::main()
}
