import Foundation

/// `scripts/install.sh` run once per test process into
/// `.build/install-test/prefix`, and C programs built against what it
/// installed, as a user would (gcc, pkg-config). Shared by InstallTests and
/// CLibraryTests, so the release build happens once.
///
/// It builds in its own folder, `.build/install-test/build`: `swift test`
/// holds the lock of `.build` while it runs, so a nested build there would
/// wait forever.
enum InstalledLibrary {
    struct Installation: Sendable {
        let root: String
        let prefix: String
        /// nil when both install runs succeeded.
        let failure: String?
    }

    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// Two release builds of the product set: ~2–4 min from a cold build
    /// folder, ~20 s when warm.
    static let installation: Installation = {
        let work = packageRoot + "/.build/install-test"
        let prefix = work + "/prefix"
        try? FileManager.default.removeItem(atPath: prefix)
        var environment = ProcessInfo.processInfo.environment
        environment["SCRATCH_PATH"] = work + "/build"
        // Twice: the second run must replace the same files without error.
        for run in 1...2 {
            let started = Date()
            let result: ProcessResult
            do {
                result = try TestTools.run(packageRoot + "/scripts/install.sh", [prefix], timeout: 1800,
                                           currentDirectory: URL(fileURLWithPath: packageRoot), environment: environment)
            } catch {
                return Installation(root: work, prefix: prefix, failure: "cannot run install.sh: \(error)")
            }
            print("install.sh run \(run): \(Int(Date().timeIntervalSince(started))) s")
            guard result.succeeded else {
                return Installation(root: work, prefix: prefix,
                                    failure: "install.sh run \(run) failed (\(result.exitCode)):\n\(result.stderr.suffix(4000))")
            }
        }
        return Installation(root: work, prefix: prefix, failure: nil)
    }()

    /// The prefix of a successful installation (throws otherwise).
    static func prefix() throws -> String {
        if let failure = installation.failure { throw TestSupportError(failure) }
        return installation.prefix
    }

    /// The environment a host of the installed library runs with.
    static func environment() throws -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["PKG_CONFIG_PATH"] = try prefix() + "/lib/pkgconfig"
        environment["LD_LIBRARY_PATH"] = try prefix() + "/lib"
        return environment
    }

    /// Compiles `examples/c/NAME.c` into `directory` with gcc (the toolchain's
    /// clang where gcc is missing), `-Wall -Werror` and the flags
    /// `pkg-config --cflags --libs httpcache` gives; returns the program's path.
    static func buildExample(_ name: String, in directory: String) throws -> String {
        let compiler = try TestTools.which("gcc") ?? TestTools.requireTool("clang")
        let pkgConfig = try TestTools.requireTool("pkg-config")
        let flags = try TestTools.run(pkgConfig, ["--cflags", "--libs", "httpcache"], environment: environment())
        guard flags.succeeded else { throw TestSupportError("pkg-config failed: \(flags.stderr)") }
        let program = directory + "/" + name
        let arguments = ["-Wall", "-Wextra", "-Werror", packageRoot + "/examples/c/\(name).c", "-o", program]
            + flags.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        let compiled = try TestTools.run(compiler, arguments)
        guard compiled.succeeded else { throw TestSupportError("\(name).c does not compile:\n\(compiled.stderr)") }
        return program
    }
}
