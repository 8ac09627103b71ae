fn main() -> std::process::ExitCode {
    descheduler::cli::main()
}
