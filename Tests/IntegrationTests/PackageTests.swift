import Foundation
import XCTest

/// `scripts/package-deb.sh`, inspected as an operator would: `dpkg-deb
/// --info/--contents`, `lintian`, and the packaged binary run on the
/// packaged configuration.
///
/// Cost: the package reuses the release build `InstalledLibrary` makes for
/// InstallTests and CLibraryTests (same `SCRATCH_PATH`), so once that exists
/// packaging is an incremental install.sh run (seconds), dpkg-deb and
/// lintian. Installing the package on this machine (a system user, files in
/// /usr and /etc) is done only when asked: as root with
/// `HTTPCACHE_DEB_INSTALL_TEST=1` (a throwaway Debian 12 container).
final class PackageTests: XCTestCase {
    /// The .deb, built once per test process.
    private static let package: Result<String, TestSupportError> = {
        do { _ = try InstalledLibrary.prefix() } catch { return .failure(TestSupportError("no release build: \(error)")) }
        let root = InstalledLibrary.packageRoot
        let dist = root + "/.build/install-test/dist"
        var environment = ProcessInfo.processInfo.environment
        environment["SCRATCH_PATH"] = root + "/.build/install-test/build"
        environment["DIST"] = dist
        let started = Date()
        let result: ProcessResult
        do {
            result = try TestTools.run(root + "/scripts/package-deb.sh", [], timeout: 1800,
                                       currentDirectory: URL(fileURLWithPath: root), environment: environment)
        } catch {
            return .failure(TestSupportError("cannot run package-deb.sh: \(error)"))
        }
        print("package-deb.sh: \(Int(Date().timeIntervalSince(started))) s")
        guard result.succeeded else {
            return .failure(TestSupportError("package-deb.sh failed (\(result.exitCode)):\n\(result.stderr.suffix(4000))"))
        }
        return .success(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }()

    private func deb() throws -> String { try Self.package.get() }

    private func dpkgDeb(_ arguments: [String]) throws -> String {
        let result = try TestTools.run(try TestTools.requireTool("dpkg-deb"), arguments)
        XCTAssertTrue(result.succeeded, result.stderr)
        return result.stdout
    }

    func testControlAndContents() throws {
        let deb = try deb()
        XCTAssertTrue(deb.hasSuffix("/httpcache_0.2.0_amd64.deb"), deb)
        let info = try dpkgDeb(["--info", deb])
        for field in ["Package: httpcache", "Version: 0.2.0", "Architecture: amd64", "Section: net"] {
            XCTAssertTrue(info.contains(field), "\(field) missing:\n\(info)")
        }
        let depends = info.split(separator: "\n").first { $0.hasPrefix(" Depends:") }.map(String.init) ?? ""
        for package in ["adduser", "libc6", "libuv1", "libssl3"] {
            XCTAssertTrue(depends.contains(package), "\(package) not in \(depends)")
        }
        XCTAssertFalse(depends.contains("swift"), depends)
        for member in ["postinst", "prerm", "postrm", "conffiles", "shlibs", "triggers", "md5sums"] {
            XCTAssertTrue(info.contains(" \(member)"), "\(member) missing:\n\(info)")
        }
        let conffiles = try extractedControl(deb, "conffiles")
        XCTAssertEqual(conffiles, "/etc/httpcache/httpcache.conf\n/etc/logrotate.d/httpcache\n")
        let postinst = try extractedControl(deb, "postinst")
        XCTAssertTrue(postinst.contains("adduser --quiet --system --group --home /var/cache/httpcache"), postinst)

        let contents = try dpkgDeb(["--contents", deb])
        let paths = contents.split(separator: "\n").map { line -> String in
            let path = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(5).joined(separator: " ")
            return path.hasPrefix("./") ? String(path.dropFirst()) : path
        }
        for path in ["/usr/bin/httpcache", "/usr/lib/libhttpcache.so.0.2.0", "/usr/lib/libhttpcache.so.0 -> libhttpcache.so.0.2.0",
                     "/usr/include/httpcache.h", "/usr/lib/pkgconfig/httpcache.pc", "/lib/systemd/system/httpcache.service",
                     "/etc/httpcache/httpcache.conf", "/etc/logrotate.d/httpcache", "/usr/share/doc/httpcache/copyright",
                     "/usr/share/doc/httpcache/changelog.gz"] {
            XCTAssertTrue(paths.contains(path), "\(path) missing:\n\(contents)")
        }
        XCTAssertTrue(contents.split(separator: "\n").allSatisfy { $0.contains(" root/root ") }, contents)
    }

    /// No lintian error (warnings and notes are listed in the output).
    func testLintianFindsNoError() throws {
        let lintian = try TestTools.requireTool("lintian")
        let result = try TestTools.run(lintian, ["--fail-on", "error", try deb()], timeout: 600)
        XCTAssertEqual(result.exitCode, 0, result.stdout + result.stderr)
        XCTAssertFalse(result.stdout.split(separator: "\n").contains { $0.hasPrefix("E: ") }, result.stdout)
    }

    /// The packaged binary, unit and configuration work together: the
    /// conffile passes `check-config`, the unit starts the binary with it,
    /// and that command serves (cache folder and port overridden on the
    /// command line, as an operator's drop-in would), reloads and stops.
    func testPackagedBinaryServesWithThePackagedConfiguration() throws {
        let root = try TemporaryDirectory(prefix: "httpcache-deb")
        defer { root.remove() }
        XCTAssertTrue(try TestTools.run(try TestTools.requireTool("dpkg-deb"), ["-x", try deb(), root.path]).succeeded)
        let unit = try String(contentsOfFile: root.path + "/lib/systemd/system/httpcache.service", encoding: .utf8)
        XCTAssertTrue(unit.contains("\nExecStart=/usr/bin/httpcache serve --config /etc/httpcache/httpcache.conf\n"), unit)
        XCTAssertTrue(unit.contains("\nUser=httpcache\n") && unit.contains("ReadWritePaths=/var/cache/httpcache /var/log/httpcache"))
        let logrotate = try String(contentsOfFile: root.path + "/etc/logrotate.d/httpcache", encoding: .utf8)
        XCTAssertTrue(logrotate.contains("--signal=USR1"), logrotate)
        let binary = root.path + "/usr/bin/httpcache"
        let config = root.path + "/etc/httpcache/httpcache.conf"
        let checked = try TestTools.run(binary, ["check-config", "--config", config])
        XCTAssertTrue(checked.succeeded, checked.stderr)
        // The packaged access-log path needs /var/log/httpcache: a folder of this test instead.
        let text = try String(contentsOfFile: config, encoding: .utf8)
            .replacingOccurrences(of: "/var/log/httpcache/", with: root.path + "/")
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        let line = unit.split(separator: "\n").first { $0.hasPrefix("ExecStart=") }!.dropFirst("ExecStart=".count)
        var arguments = line.split(separator: " ").dropFirst().map { $0 == "/etc/httpcache/httpcache.conf" ? config : String($0) }
        arguments += ["--cache-dir", root.path + "/cache", "--port", "0"]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let first = try ProxyProcess.readLine(stdout.fileHandleForReading, timeout: 20)
        let port = try XCTUnwrap(Int(first.split(separator: ":").last ?? ""), first)
        XCTAssertEqual(try RawHTTPClient.get(url: "http://127.0.0.1:\(port)/readyz").status, 200)
        kill(process.processIdentifier, SIGHUP)
        XCTAssertEqual(try RawHTTPClient.get(url: "http://127.0.0.1:\(port)/livez").status, 200)
        kill(process.processIdentifier, SIGTERM)
        XCTAssertTrue(TestTools.waitForExit(process, timeout: 10))
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertEqual((try? String(contentsOfFile: root.path + "/access.log", encoding: .utf8))?
            .split(separator: "\n").count, 2, "the packaged access-log setting is in force")
    }

    /// Opt-in (root and `HTTPCACHE_DEB_INSTALL_TEST=1`, e.g. a throwaway
    /// Debian 12 container): `apt-get install` of the package, then the
    /// unit's ExecStart line run by hand as the service user (no systemd
    /// needed), and `apt-get purge`.
    func testInstallAndRunAsTheServiceUser() throws {
        guard geteuid() == 0, ProcessInfo.processInfo.environment["HTTPCACHE_DEB_INSTALL_TEST"] == "1" else {
            throw XCTSkip("installs system-wide: set HTTPCACHE_DEB_INSTALL_TEST=1 as root on a throwaway machine")
        }
        let apt = try TestTools.requireTool("apt-get")
        let installed = try TestTools.run(apt, ["install", "-y", "-q", try deb()], timeout: 600)
        XCTAssertTrue(installed.succeeded, installed.stdout + installed.stderr)
        defer { _ = try? TestTools.run(apt, ["purge", "-y", "-q", "httpcache"], timeout: 600) }
        XCTAssertTrue(try TestTools.run("/usr/bin/id", ["httpcache"]).succeeded, "the system user exists")
        var info = stat()
        XCTAssertEqual(stat("/var/cache/httpcache", &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o750)
        let unit = try String(contentsOfFile: "/lib/systemd/system/httpcache.service", encoding: .utf8)
        let line = unit.split(separator: "\n").first { $0.hasPrefix("ExecStart=") }!.dropFirst("ExecStart=".count)
        let port = try TestTools.freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try TestTools.requireTool("runuser"))
        process.arguments = ["-u", "httpcache", "--"] + line.split(separator: " ").map(String.init) + ["--port", String(port)]
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        XCTAssertTrue(try ProxyProcess.readLine(stdout.fileHandleForReading, timeout: 20).hasPrefix("listening on http://127.0.0.1:"))
        XCTAssertEqual(try RawHTTPClient.get(url: "http://127.0.0.1:\(port)/readyz").status, 200)
        kill(process.processIdentifier, SIGTERM)
        XCTAssertTrue(TestTools.waitForExit(process, timeout: 10))
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: "/var/log/httpcache/access.log"))
    }

    private func extractedControl(_ deb: String, _ name: String) throws -> String {
        let directory = try TemporaryDirectory(prefix: "httpcache-deb-control")
        defer { directory.remove() }
        XCTAssertTrue(try TestTools.run(try TestTools.requireTool("dpkg-deb"), ["-e", deb, directory.path]).succeeded)
        return try String(contentsOfFile: directory.path + "/" + name, encoding: .utf8)
    }
}
