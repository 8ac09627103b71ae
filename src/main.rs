// A snapshot of a large cluster is millions of small allocations (names, labels, owners);
// mimalloc makes building and freeing them markedly cheaper than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    descheduler::cli::main()
}
