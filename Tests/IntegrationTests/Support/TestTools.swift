import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Errors thrown by the test-support helpers.
struct TestSupportError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Result of running a child process with `TestTools.run`.
struct ProcessResult: Sendable {
    var exitCode: Int32
    /// True when the process was killed because it exceeded its timeout.
    var timedOut: Bool
    var stdoutData: Data
    var stderrData: Data
    var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
    var stderr: String { String(decoding: stderrData, as: UTF8.self) }
    var succeeded: Bool { exitCode == 0 && !timedOut }
}

/// Process, port, temp-dir and polling helpers for integration tests.
enum TestTools {
    // MARK: Executables

    /// Directories searched in addition to $PATH (nginx lives in /usr/sbin,
    /// which is not on a normal user's PATH).
    static let extraSearchDirectories = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]

    /// Absolute path of an executable named `name`, or nil (like `which`).
    static func which(_ name: String) -> String? {
        if name.contains("/") {
            return FileManager.default.isExecutableFile(atPath: name) ? name : nil
        }
        let pathDirs = (ProcessInfo.processInfo.environment["PATH"] ?? "")
            .split(separator: ":").map(String.init)
        for dir in pathDirs + extraSearchDirectories where !dir.isEmpty {
            let candidate = dir + "/" + name
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate, isDirectory: &isDir), !isDir.boolValue,
               FileManager.default.isExecutableFile(atPath: candidate) {
                return candidate
            }
        }
        return nil
    }

    /// Path of `name`, or throws `XCTSkip` when the tool is not installed.
    /// (scripts/test.sh installs every tool, so a skip means the tests were
    /// run without it.)
    static func requireTool(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        guard let path = which(name) else {
            throw XCTSkip("\(name) is not installed (run scripts/install-deps.sh)", file: file, line: line)
        }
        return path
    }

    // MARK: Processes

    /// Runs `executable` (a path or a name looked up with `which`) with
    /// `arguments`, stdin from /dev/null, capturing stdout and stderr.
    /// The process is sent SIGTERM (then SIGKILL) once `timeout` seconds
    /// have passed; `timedOut` is then true. Never hangs longer than about
    /// `timeout + 2` seconds.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], timeout: TimeInterval = 60,
                    currentDirectory: URL? = nil, environment: [String: String]? = nil) throws -> ProcessResult {
        guard let path = which(executable) else {
            throw TestSupportError("executable not found: \(executable)")
        }
        // Capture to files: pipes could fill up and deadlock the child.
        let captureDir = try makeTempDirectory(prefix: "proc")
        defer { removeTempDirectory(captureDir) }
        let outURL = captureDir.appendingPathComponent("stdout")
        let errURL = captureDir.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let outHandle = try FileHandle(forWritingTo: outURL)
        let errHandle = try FileHandle(forWritingTo: errURL)
        defer {
            try? outHandle.close()
            try? errHandle.close()
        }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = outHandle
        process.standardError = errHandle
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        if let environment { process.environment = environment }
        try process.run()

        let timedOut = !waitForExit(process, timeout: timeout)
        if timedOut {
            process.terminate()
            if !waitForExit(process, timeout: 2) {
                kill(process.processIdentifier, SIGKILL)
                _ = waitForExit(process, timeout: 5)
            }
        }
        process.waitUntilExit()
        return ProcessResult(exitCode: process.terminationStatus, timedOut: timedOut,
                             stdoutData: (try? Data(contentsOf: outURL)) ?? Data(),
                             stderrData: (try? Data(contentsOf: errURL)) ?? Data())
    }

    /// Polls until `process` has exited; false if still running after `timeout`.
    static func waitForExit(_ process: Process, timeout: TimeInterval) -> Bool {
        waitUntil(timeout: timeout, pollInterval: 0.01) { !process.isRunning }
    }

    // MARK: Polling

    /// Polls `condition` until it is true (returns true) or `timeout`
    /// seconds have passed (returns false).
    @discardableResult
    static func waitUntil(timeout: TimeInterval, pollInterval: TimeInterval = 0.02,
                          _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if try condition() { return true }
            if Date() >= deadline { return false }
            Thread.sleep(forTimeInterval: pollInterval)
        }
    }

    /// Returns once the wall clock's millisecond (the cache's time stamps) has
    /// moved on, so what follows is stamped later than what came before.
    static func waitForTheNextMillisecond() {
        let now = { Int64(Date().timeIntervalSince1970 * 1000) }
        let start = now()
        waitUntil(timeout: 1, pollInterval: 0.0005) { now() > start }
    }

    // MARK: Ports

    /// A loopback TCP port that was free a moment ago (bind 127.0.0.1:0,
    /// read the port, close). Racy by nature; callers that bind should retry.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket(): \(errnoString())") }
        defer { close(fd) }
        var addr = loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw TestSupportError("bind(): \(errnoString())") }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let got = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        guard got == 0 else { throw TestSupportError("getsockname(): \(errnoString())") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// True when something accepts TCP connections on 127.0.0.1:`port`.
    static func canConnect(port: Int, timeout: TimeInterval = 0.5) -> Bool {
        guard let conn = try? RawHTTPConnection(port: port, timeout: timeout) else { return false }
        conn.close()
        return true
    }

    /// Waits until 127.0.0.1:`port` accepts connections; false on timeout.
    static func waitForPort(_ port: Int, timeout: TimeInterval) -> Bool {
        waitUntil(timeout: timeout, pollInterval: 0.02) { canConnect(port: port, timeout: 0.5) }
    }

    static func loopbackAddress(port: Int) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return addr
    }

    static func errnoString(_ code: Int32 = errno) -> String {
        String(cString: strerror(code)) + " (errno \(code))"
    }

    // MARK: Temp directories

    /// Creates a fresh, world-readable directory under the system temp dir.
    static func makeTempDirectory(prefix: String = "httpcache-test") throws -> URL {
        let base = URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
        let url = base.appendingPathComponent("\(prefix)-\(getpid())-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        return url
    }

    /// Removes a directory tree, ignoring errors.
    static func removeTempDirectory(_ url: URL) {
        try? FileManager.default.removeItem(at: url)
    }
}

/// A temp directory removed when the object is deallocated (or on `remove()`).
final class TemporaryDirectory {
    let url: URL
    var path: String { url.path }

    init(prefix: String = "httpcache-test") throws {
        url = try TestTools.makeTempDirectory(prefix: prefix)
    }

    func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    func remove() { TestTools.removeTempDirectory(url) }

    deinit { remove() }
}
