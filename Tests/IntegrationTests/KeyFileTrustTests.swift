import Foundation
import XCTest

/// Issue #37: a key file is trusted only as ssh trusts a private key: a
/// regular file of this user's, readable and writable by no one else, of a
/// key's size. Anything else is refused at once (exit 22, the key error)
/// with what is wrong and how to fix it; a FIFO or /dev/zero is never read.
final class KeyFileTrustTests: XCTestCase {
    private func serve(_ directory: TemporaryDirectory, key: String) throws -> ProcessResult {
        try TestTools.run(CLITests.binary, ["serve", "--cache-dir", directory.file("cache").path, "--port", "0",
                                            "--encryption-key-file", key], timeout: 3)
    }

    private func assertRefused(_ result: ProcessResult, _ message: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(result.timedOut, "refused within 3 s, not hung", file: file, line: line)
        XCTAssertEqual(result.exitCode, 22, result.stderr, file: file, line: line)
        XCTAssertTrue(result.stderr.contains(message), "\(message) in: \(result.stderr)", file: file, line: line)
    }

    func testUntrustedKeyFilesAreRefusedWithTheirReason() throws {
        let directory = try TemporaryDirectory(prefix: "key-trust")
        defer { directory.remove() }
        let shared = directory.file("shared.key").path
        try Data(String(repeating: "ab", count: 32).utf8).write(to: URL(fileURLWithPath: shared))
        try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: shared)
        assertRefused(try serve(directory, key: shared),
                      "key file \(shared) is readable and writable by group or others (mode 0666): chmod 600 \(shared)")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: shared)
        assertRefused(try serve(directory, key: shared),
                      "key file \(shared) is readable by group or others (mode 0644): chmod 600 \(shared)")

        assertRefused(try serve(directory, key: "/dev/zero"), "key file /dev/zero is not a regular file (a character device)")

        let fifo = directory.file("fifo.key").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        assertRefused(try serve(directory, key: fifo), "key file \(fifo) is not a regular file (a FIFO)")

        let good = directory.file("good.key").path
        try Data(String(repeating: "cd", count: 32).utf8).write(to: URL(fileURLWithPath: good))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: good)
        let link = directory.file("link.key").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: good)
        assertRefused(try serve(directory, key: link), "key file \(link) is a symbolic link")

        let missing = directory.file("missing.key").path
        let gone = try serve(directory, key: missing)
        assertRefused(gone, "key file \(missing): no such file")
        XCTAssertFalse(gone.stderr.contains("takes a file holding"), gone.stderr)

        let short = directory.file("short.key").path
        try Data("abc".utf8).write(to: URL(fileURLWithPath: short))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: short)
        assertRefused(try serve(directory, key: short), "holds no encryption key")

        // The good one is taken: the proxy runs until the timeout stops it.
        let served = try serve(directory, key: good)
        XCTAssertTrue(served.timedOut, "a mode 600 key file is accepted: \(served.stderr)")
    }
}
