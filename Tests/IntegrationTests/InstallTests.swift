import Foundation
import XCTest

/// `scripts/install.sh` into a temporary prefix, then what a user of the
/// installed files sees: a self-contained library exporting only `hc_*`, a
/// C program built with pkg-config, and the installed `httpcache` binary.
///
/// The install runs once per test process, shared with CLibraryTests
/// (see `InstalledLibrary`).
final class InstallTests: XCTestCase {
    private func installedPrefix() throws -> String { try InstalledLibrary.prefix() }
    private static var packageRoot: String { InstalledLibrary.packageRoot }

    private var library: String { get throws { try installedPrefix() + "/lib/libhttpcache.so" } }
    private var binary: String { get throws { try installedPrefix() + "/bin/httpcache" } }

    func testInstalledFiles() throws {
        let prefix = try installedPrefix()
        let manager = FileManager.default
        XCTAssertTrue(manager.fileExists(atPath: prefix + "/include/httpcache.h"))
        XCTAssertTrue(manager.fileExists(atPath: prefix + "/lib/pkgconfig/httpcache.pc"))
        XCTAssertTrue(manager.isExecutableFile(atPath: prefix + "/bin/httpcache"))
        XCTAssertEqual(try manager.destinationOfSymbolicLink(atPath: prefix + "/lib/libhttpcache.so"), "libhttpcache.so.0")
        XCTAssertEqual(try manager.destinationOfSymbolicLink(atPath: prefix + "/lib/libhttpcache.so.0"), "libhttpcache.so.0.2.0")
        let dynamic = try TestTools.run(TestTools.requireTool("readelf"), ["-d", try library])
        XCTAssertTrue(dynamic.stdout.contains("Library soname: [libhttpcache.so.0]"), dynamic.stdout)
        XCTAssertFalse(dynamic.stdout.contains("RPATH") || dynamic.stdout.contains("RUNPATH"), dynamic.stdout)
    }

    /// Neither the library nor the binary needs the Swift toolchain's libraries.
    func testNoSwiftRuntimeDependency() throws {
        let ldd = try TestTools.requireTool("ldd")
        for file in [try library, try binary] {
            let result = try TestTools.run(ldd, [file])
            XCTAssertTrue(result.succeeded, result.stderr)
            XCTAssertFalse(result.stdout.contains("not found"), "\(file):\n\(result.stdout)")
            for name in ["libswift", "libdispatch", "libBlocksRuntime", "libFoundation"] {
                XCTAssertFalse(result.stdout.contains(name), "\(file) needs \(name):\n\(result.stdout)")
            }
        }
    }

    /// The dynamic symbol table defines the C API and nothing else.
    func testExportsOnlyTheCAPI() throws {
        let result = try TestTools.run(TestTools.requireTool("nm"), ["-D", "--defined-only", try library])
        XCTAssertTrue(result.succeeded, result.stderr)
        let names = result.stdout.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) }
        XCTAssertEqual(names.filter { !$0.hasPrefix("hc_") }, [], result.stdout)
        for name in ["hc_version", "hc_version_number", "hc_strerror", "hc_config_new", "hc_config_set",
                     "hc_config_set_log", "hc_config_errmsg", "hc_config_free", "hc_open", "hc_close", "hc_serve", "hc_port",
                     "hc_proxy_url", "hc_cache_size", "hc_cache_remove", "hc_cache_clear", "hc_cache_export",
                     "hc_cache_import", "hc_cache_list"] {
            XCTAssertTrue(names.contains(name), "\(name) is not exported:\n\(result.stdout)")
        }
    }

    /// examples/c/version.c builds with pkg-config and passes, also with the
    /// Swift backtracer forced on (the library must keep the host's signals).
    func testCExampleBuildsAndRuns() throws {
        let prefix = try installedPrefix()
        // gcc as a C user would; the Swift toolchain's clang where gcc is missing.
        let gcc = try TestTools.which("gcc") ?? TestTools.requireTool("clang")
        let pkgConfig = try TestTools.requireTool("pkg-config")
        var environment = ProcessInfo.processInfo.environment
        environment["PKG_CONFIG_PATH"] = prefix + "/lib/pkgconfig"
        let flags = try TestTools.run(pkgConfig, ["--cflags", "--libs", "httpcache"], environment: environment)
        XCTAssertTrue(flags.succeeded, flags.stderr)
        let directory = try TemporaryDirectory(prefix: "httpcache-install")
        let program = directory.path + "/version"
        let arguments = ["-Wall", "-Werror", Self.packageRoot + "/examples/c/version.c", "-o", program]
            + flags.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        let compiled = try TestTools.run(gcc, arguments)
        XCTAssertTrue(compiled.succeeded, compiled.stderr)
        if let gxx = TestTools.which("g++") {  // the extern "C" guards and C++-clean declarations
            let cxx = try TestTools.run(gxx, ["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-x", "c++",
                                              prefix + "/include/httpcache.h"])
            XCTAssertTrue(cxx.succeeded, cxx.stderr)
        }

        // No LD_LIBRARY_PATH: httpcache.pc's rpath finds the library of a custom prefix.
        environment["LD_LIBRARY_PATH"] = nil
        let ran = try TestTools.run(program, [], timeout: 30, environment: environment)
        XCTAssertEqual(ran.exitCode, 0, ran.stdout + ran.stderr)
        XCTAssertTrue(ran.stdout.contains("all checks passed"), ran.stdout)

        guard let backtracer = Self.swiftBacktracer() else {
            print("swift-backtrace-static not found next to swift: backtracer check skipped")
            return
        }
        environment["SWIFT_BACKTRACE"] = "enable=yes,swift-backtrace=\(backtracer)"
        let forced = try TestTools.run(program, [], timeout: 30, environment: environment)
        XCTAssertEqual(forced.exitCode, 0, "with the backtracer forced on:\n" + forced.stdout + forced.stderr)
    }

    /// The installed binary serves, answers /ping and exits 0 on SIGTERM.
    func testInstalledBinaryServes() throws {
        let curl = try TestTools.requireTool("curl")
        let cache = try TemporaryDirectory(prefix: "httpcache-install-cache")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try binary)
        process.arguments = ["serve", "--port", "0", "--cache-dir", cache.path]
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        let line = try ProxyProcess.readLine(stdout.fileHandleForReading, timeout: 20)
        XCTAssertNotNil(line.range(of: #"^listening on http://127\.0\.0\.1:\d+$"#, options: .regularExpression), line)
        let port = try XCTUnwrap(Int(line.split(separator: ":").last ?? ""), line)
        let ping = try TestTools.run(curl, ["-sS", "--max-time", "10", "http://127.0.0.1:\(port)/ping"])
        XCTAssertTrue(ping.succeeded, ping.stderr)
        XCTAssertEqual(ping.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "pong")

        process.terminate()  // SIGTERM
        XCTAssertTrue(TestTools.waitForExit(process, timeout: 20), "no exit within 20 s of SIGTERM")
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .exit)
        XCTAssertEqual(process.terminationStatus, 0)
    }

    /// The toolchain's static backtracer (libexec next to the `swift` driver).
    private static func swiftBacktracer() -> String? {
        guard let swift = TestTools.which("swift") else { return nil }
        let driver = URL(fileURLWithPath: swift).resolvingSymlinksInPath()
        let path = driver.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("libexec/swift/linux/swift-backtrace-static").path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }
}
