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
                     "/usr/include/httpcache.h", "/usr/lib/x86_64-linux-gnu/pkgconfig/httpcache.pc", "/lib/systemd/system/httpcache.service",
                     "/etc/httpcache/httpcache.conf", "/etc/logrotate.d/httpcache", "/usr/share/doc/httpcache/copyright",
                     "/usr/share/doc/httpcache/changelog.gz", "/usr/share/doc/httpcache/README.md.gz",
                     "/usr/share/man/man1/httpcache.1.gz", "/usr/share/lintian/overrides/httpcache"] {
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

    /// The warnings a new user found are gone: lintian (every tag, with
    /// `--display-info`) names no missing manual page or copyright notice and
    /// no warning at all; the two soname tags overridden on purpose carry
    /// their reason in the package.
    func testLintianFindsNoDocumentationOrSonameWarning() throws {
        let lintian = try TestTools.requireTool("lintian")
        let result = try TestTools.run(lintian, ["--display-info", "--show-overrides", try deb()], timeout: 600)
        XCTAssertEqual(result.exitCode, 0, result.stdout + result.stderr)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        for tag in ["no-manual-page", "binary-without-manpage", "no-copyright-file", "copyright-without-copyright-notice",
                    "package-name-doesnt-match-sonames", "link-to-shared-library-in-wrong-package",
                    "pkg-config-unavailable-for-cross-compilation", "systemd-service-file-missing-documentation-key", "manpage-has-errors-from-man", "groff-message",
                    "manpage-has-bad-whatis-entry", "debian-changelog-file-missing",
                    "unknown-copyright-format-uri", "missing-license-paragraph-in-dep5-copyright"] {
            let found = lines.filter { ($0.hasPrefix("W: ") || $0.hasPrefix("E: ")) && $0.contains(" \(tag)") }
            XCTAssertTrue(found.isEmpty, "\(tag):\n\(result.stdout)")
        }
        // No warning at all (pkg-config-unavailable-for-cross-compilation was
        // the fifth: the .pc is now under the multiarch folder).
        XCTAssertTrue(lines.allSatisfy { !$0.hasPrefix("W: ") && !$0.hasPrefix("E: ") }, result.stdout)
        // Both overrides are in use (none stale), and each has its reason.
        for tag in ["package-name-doesnt-match-sonames", "link-to-shared-library-in-wrong-package"] {
            XCTAssertTrue(lines.contains { $0.hasPrefix("O: httpcache: \(tag) ") }, "\(tag) not overridden:\n\(result.stdout)")
        }
        XCTAssertFalse(result.stdout.contains("unused-override") || result.stdout.contains("mismatched-override"), result.stdout)
        let root = try TemporaryDirectory(prefix: "httpcache-deb-overrides")
        defer { root.remove() }
        XCTAssertTrue(try TestTools.run(try TestTools.requireTool("dpkg-deb"), ["-x", try deb(), root.path]).succeeded)
        let overrides = try String(contentsOfFile: root.path + "/usr/share/lintian/overrides/httpcache", encoding: .utf8)
        XCTAssertTrue(overrides.contains("# One package carries the service, the CLI and the C library"), overrides)
        XCTAssertTrue(overrides.contains("split into libhttpcache0"), overrides)
    }

    /// The manual page renders without a groff warning and documents every
    /// command; the copyright file is machine-readable (DEP 5) and the
    /// README is the source tree's.
    func testManualPageCopyrightAndReadme() throws {
        let root = try TemporaryDirectory(prefix: "httpcache-deb-doc")
        defer { root.remove() }
        XCTAssertTrue(try TestTools.run(try TestTools.requireTool("dpkg-deb"), ["-x", try deb(), root.path]).succeeded)
        var environment = ProcessInfo.processInfo.environment
        environment["MANWIDTH"] = "100"
        environment["LC_ALL"] = "C.UTF-8"
        let man = try TestTools.run(try TestTools.requireTool("man"),
                                    ["--warnings", "-l", root.path + "/usr/share/man/man1/httpcache.1.gz"],
                                    environment: environment)
        XCTAssertTrue(man.succeeded, man.stderr)
        XCTAssertEqual(man.stderr, "", "groff warnings")
        let page = man.stdout // not a terminal: man-db prints plain text
        for heading in ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "FILES"] {
            XCTAssertTrue(page.contains("\n\(heading)\n"), "\(heading) missing:\n\(page)")
        }
        XCTAssertTrue(page.contains("httpcache - a play-while-download HTTP caching proxy for media"), page)
        for command in ["serve", "check-config", "url", "cache", "cache list", "cache rm", "cache clear", "cache export",
                        "cache import", "cache unpin", "cache purge", "cache rekey", "preload", "download", "download add",
                        "download list", "download pause", "download resume", "download rm", "download wait", "stats"] {
            XCTAssertTrue(page.contains("\n   httpcache \(command)\n"), "no section for httpcache \(command):\n\(page)")
        }
        for option in ["--cache-dir", "--config", "--drain-timeout", "--encryption-key-file", "--json"] {
            XCTAssertTrue(page.contains(option), "\(option) missing")
        }
        // What --help says is what the page says (one sentence each way).
        let help = try TestTools.run(root.path + "/usr/bin/httpcache", ["serve", "--help"])
        XCTAssertTrue(help.stdout.contains("Run the proxy until SIGINT, SIGTERM or SIGQUIT."), help.stdout)
        XCTAssertTrue(page.contains("Run the proxy until SIGINT, SIGTERM or SIGQUIT."), page)

        let doc = root.path + "/usr/share/doc/httpcache/"
        let copyright = try String(contentsOfFile: doc + "copyright", encoding: .utf8)
        XCTAssertTrue(copyright.hasPrefix("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"), copyright)
        for field in ["\nUpstream-Name: httpcache\n", "\n\nFiles: *\nCopyright: ", "\nLicense: "] {
            XCTAssertTrue(copyright.contains(field), "\(field) missing:\n\(copyright)")
        }
        let readme = try TestTools.run(try TestTools.requireTool("gzip"), ["-dc", doc + "README.md.gz"])
        XCTAssertTrue(readme.succeeded, readme.stderr)
        XCTAssertEqual(readme.stdoutData, try Data(contentsOf: URL(fileURLWithPath: InstalledLibrary.packageRoot + "/README.md")))
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
