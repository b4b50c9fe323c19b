import CacheUpstream
import Foundation
import Glibc
import HTTPCache
@testable import HTTPCacheC
import XCTest

/// hc_config_set takes every option of `httpcache serve` (`ServeOption.all`),
/// checked by the same table, and include/httpcache.h documents them all.
final class ConfigOptionTests: XCTestCase {
    /// A valid value of each option: the test fails for an option added
    /// without one, and for one that hc_config_set refuses.
    private static let samples: [String: String] = [
        "host": "::1", "port": "8080", "cache-dir": "/tmp/x", "log-level": "debug", "log-file": "/tmp/x.log",
        "connect-timeout": "2.5", "read-timeout": "30", "idle-timeout": "5", "head-timeout": "1", "client-timeout": "9",
        "max-connections": "100", "loops": "2", "max-cache-size": "2GiB", "ignore-query": "token", "revalidate-after": "0",
        "origin": "https://media.example.com", "access-log": "/tmp/access.log", "ca-file": "/tmp/ca.pem", "insecure": "true",
        "header": "Authorization: Bearer x", "forward-header": "Referer", "allow-origin": "media.example.com",
        "cache-types": "text/html,image/*", "cache-status-name": "edge-1",
        "server-name": "media.example.com", "max-connections-per-client": "4", "allow-lan-reverse-proxy": "true",
        "upstream-proxy": "http://127.0.0.1:3128", "no-upstream-proxy-for": "intranet.example",
        "drain-timeout": "5",
        "encryption-key-file": "KEYFILE",  // written by the test (a key file's own test is CacheHandleTests.testEncryptionKeyFile)
        "download-parallel": "8", "download-rate": "2MB", "strip-cmcd": "true", "cmcd-hints": "false", "prefetch": "3",
    ]

    func testEveryServeOptionIsSettable() throws {
        let config = hc_config_new()
        defer { hc_config_free(config) }
        let keyFile = NSTemporaryDirectory() + "hc-sample-\(UUID().uuidString).key"
        try Data(String(repeating: "ab", count: 32).utf8).write(to: URL(fileURLWithPath: keyFile))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFile)  // a key others can read is refused
        defer { try? FileManager.default.removeItem(atPath: keyFile) }
        XCTAssertEqual(Set(Self.samples.keys), Set(ServeOption.all.map(\.name)))
        for option in ServeOption.all {
            let sample = Self.samples[option.name] == "KEYFILE" ? keyFile : Self.samples[option.name] ?? "?"
            XCTAssertEqual(hc_config_set(config, option.name, sample), 0, option.name)
        }
        XCTAssertEqual(hc_config_set(config, "no-such-option", "1"), -1)
    }

    func testBadValuesAreRefusedSayingWhatIsValid() throws {
        let config = hc_config_new()
        defer { hc_config_free(config) }
        let table: [(String, String, String)] = [
            ("port", "99999", "0 to 65535"), ("port", "x", "0 to 65535"), ("log-level", "verbose", "trace, debug"),
            ("loops", "0", "1 to 256"), ("origin", "https://media.example.com/path", "without a path"),
            ("origin", "notaurl", "http or https"), ("header", "Host: x", "does not set itself"),
            ("header", "no colon", "'Name: value'"), ("connect-timeout", "-5", "above 0"), ("read-timeout", "nan", "above 0"),
            ("max-cache-size", "5 parsecs", "500MB"), ("host", "localhost", "IPv4 or IPv6"), ("insecure", "maybe", "true or false"),
            ("max-connections", "0", "1 or more"), ("ignore-query", "a=b", "query parameter"),
            // Empty is not "no key": a plaintext folder for an unset variable (issue 35).
            ("encryption-key-file", "", "a file holding a key"),
        ]
        for (name, value, valid) in table {
            XCTAssertEqual(hc_config_set(config, name, value), -1, "\(name) \(value)")
            var settings = ServeSettings(cacheDirectory: "/tmp/x")
            XCTAssertThrowsError(try settings.set(name, value)) { error in
                XCTAssertEqual((error as? HTTPCacheError)?.code, .invalidArgument)
                XCTAssertTrue("\(error)".contains(valid), "\(name) \(value): \(error)")
            }
        }
    }

    /// origin, access-log and allow-origin were out of the C library's reach:
    /// a cache opened from C now serves in reverse-proxy mode and logs.
    func testReverseOriginAndAccessLogFromC() throws {
        let folder = NSTemporaryDirectory() + "hc-config-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let log = folder + "-access.log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        let config = hc_config_new()
        defer { hc_config_free(config) }
        // Port 9 (discard) refuses: the origin fails, which only reverse mode tries.
        for (name, value) in [("cache-dir", folder), ("origin", "http://127.0.0.1:9"), ("access-log", log),
                              ("allow-origin", "127.0.0.1"), ("idle-timeout", "3")] {
            XCTAssertEqual(hc_config_set(config, name, value), 0, name)
        }
        var cache: OpaquePointer?
        XCTAssertEqual(hc_open(config, &cache), 0)
        defer { hc_close(cache) }
        XCTAssertEqual(hc_serve(cache), 0)
        let status = try statusOf(port: Int(hc_port(cache)), path: "/movie.mp4")
        XCTAssertEqual(status, 502, "a forward proxy answers 404 to a path that is not a proxy URL")
        let deadline = Date().addingTimeInterval(3)
        var text = ""
        while Date() < deadline, !text.contains("/movie.mp4") {
            text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            usleep(50_000)
        }
        XCTAssertTrue(text.contains("\"/movie.mp4\" 502 "), text)
    }

    /// The option list in include/httpcache.h is the table's: names and help.
    func testHeaderDocumentsEveryOption() throws {
        let header = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../include/httpcache.h").standardized
        let text = try String(contentsOf: header, encoding: .utf8)
        // Each option's name and help, wrapped at 78 columns.
        let expected = ServeOption.all.map { option in
            var lines = [" *   \"\(option.name)\":"]
            for word in option.help.split(separator: " ") {
                if lines[lines.count - 1].count + 1 + word.count > 78 { lines.append(" *      ") }
                lines[lines.count - 1] += " " + word
            }
            return lines.joined(separator: "\n") + "\n"
        }.joined()
        XCTAssertTrue(text.contains(expected), "include/httpcache.h should list, between its option markers:\n" + expected)
    }

    /// A library leaves its host's open-file limit alone (serving raised
    /// the soft limit to the hard one, which only the httpcache binary may).
    func testServingLeavesTheFileLimitAlone() throws {
        var limit = rlimit()
        XCTAssertEqual(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit), 0)
        let original = limit
        defer { var back = original; setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &back) }
        // A soft limit under the hard one, and far above what this process uses.
        guard limit.rlim_max > 8192, limit.rlim_max < 1 << 40 else { throw XCTSkip("no finite hard open-file limit above 8192") }
        limit.rlim_cur = limit.rlim_max - 1
        XCTAssertEqual(setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit), 0)
        let folder = NSTemporaryDirectory() + "hc-rlimit-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let config = hc_config_new()
        defer { hc_config_free(config) }
        XCTAssertEqual(hc_config_set(config, "cache-dir", folder), 0)
        var cache: OpaquePointer?
        XCTAssertEqual(hc_open(config, &cache), 0)
        XCTAssertEqual(hc_serve(cache), 0)
        hc_close(cache)
        var after = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &after)
        XCTAssertEqual(after.rlim_cur, limit.rlim_cur)
    }

    /// The origin's User-Agent and hc_version carry the release the header names.
    func testVersionIsTheHeadersEverywhere() throws {
        let header = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../include/httpcache.h").standardized, encoding: .utf8)
        let parts = ["MAJOR", "MINOR", "PATCH"].map { name in
            header.split(separator: "\n").first { $0.hasPrefix("#define HC_VERSION_\(name) ") }?.split(separator: " ").last.map(String.init) ?? "?"
        }
        let version = parts.joined(separator: ".")
        XCTAssertEqual(String(cString: hc_version()), version)
        XCTAssertEqual(UpstreamConfiguration().userAgent, "HTTPCache/" + version)
    }

    private func statusOf(port: Int, path: String) throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        XCTAssertEqual(connected, 0)
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var answer = [UInt8](repeating: 0, count: 4096)
        let count = answer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        let line = String(decoding: answer.prefix(max(0, count)), as: UTF8.self)
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
}
