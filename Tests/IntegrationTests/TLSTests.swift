import Foundation
import HTTPCache
import XCTest

/// HTTPS origins: nginx with certificates from a test CA made at test time.
final class TLSTests: XCTestCase {
    private var certificates: TestCertificates!
    private var directory: TemporaryDirectory!
    private var root: URL!
    private var origins: [NginxOrigin] = []
    private var servers: [MediaCache] = []

    override func setUpWithError() throws {
        certificates = try TestCertificates()
        directory = try TemporaryDirectory(prefix: "httpcache-tls")
        root = directory.url.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    override func tearDown() {
        servers.forEach { $0.close() }
        origins.forEach { $0.stop() }
        servers = []
        origins = []
    }

    private func origin(_ tls: TLSConfig) throws -> NginxOrigin {
        let origin = try NginxOrigin(root: root, tls: tls)
        origins.append(origin)
        return origin
    }

    /// A running proxy trusting the test CA unless `configure` says otherwise.
    private func proxy(logs: LogCapture = LogCapture(),
                       _ configure: (inout HTTPCacheConfiguration) -> Void = { _ in }) throws -> MediaCache {
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.file("cache-\(servers.count)").path)
        configuration.caFile = certificates.caFile
        configure(&configuration)
        let server = try MediaCache(configuration: configuration, logger: logs.logger)
        try server.serve()
        servers.append(server)
        return server
    }

    func testWholeFileAndRandomRangesOverHTTPSAreByteExact() throws {
        let whole = try TestFile.random(size: 3_000_000, seed: 21, in: root, name: "movie.bin")
        let ranged = try TestFile.random(size: 2_000_000, seed: 22, in: root, name: "ranges.bin")
        let origin = try origin(certificates.good)
        let server = try proxy()

        let cold = try RawHTTPClient.get(url: try server.proxyURL(for: origin.url("/movie.bin")), timeout: 30)
        XCTAssertEqual(cold.status, 200, cold.bodyString)
        XCTAssertBytes(cold.body, equal: whole)
        let warm = try RawHTTPClient.get(url: try server.proxyURL(for: origin.url("/movie.bin")), timeout: 30)
        XCTAssertBytes(warm.body, equal: whole)

        let connection = try RawHTTPConnection(port: server.servingPort)
        let path = try RawHTTPClient.parse(url: try server.proxyURL(for: origin.url("/ranges.bin"))).path
        var generator = SplitMix(seed: 5)
        for _ in 0..<60 {
            let a = Int(generator.next() % 2_000_000)
            let b = min(1_999_999, a + Int(generator.next() % 100_000))
            let response = try connection.get(path, range: "bytes=\(a)-\(b)")
            XCTAssertEqual(response.status, 206)
            XCTAssertBytes(response.body, equal: ranged, range: a..<(b + 1))
        }
        // Keep-alive over TLS: the origin saw far fewer connections than requests.
        let log = origin.accessLog(waitingFor: 2)
        let connections = Set(log.map(\.connection))
        XCTAssertGreaterThan(log.count, 10)
        XCTAssertLessThanOrEqual(connections.count, 3, "\(log.count) requests on \(connections.count) connections")
    }

    func testHostNameOverHTTPSWithSNI() throws {
        let file = try TestFile.random(size: 200_000, seed: 23, in: root, name: "named.bin")
        let origin = try origin(certificates.good)
        let server = try proxy()
        // "localhost" is checked against the certificate's DNS name (and sent as SNI).
        let url = try server.proxyURL(for: "https://localhost:\(origin.port)/named.bin")
        let response = try RawHTTPClient.get(url: url, range: "bytes=1000-50999")
        XCTAssertEqual(response.status, 206, response.bodyString)
        XCTAssertBytes(response.body, equal: file, range: 1000..<51000)
    }

    func testCertificateForAnotherHostIsRefused() throws {
        _ = try TestFile.random(size: 1000, seed: 24, in: root, name: "a.bin")
        let origin = try origin(certificates.wrongHost)
        let logs = LogCapture()
        let server = try proxy(logs: logs)
        for url in [origin.url("/a.bin"), "https://localhost:\(origin.port)/a.bin"] {
            let response = try RawHTTPClient.get(url: try server.proxyURL(for: url))
            XCTAssertEqual(response.status, 502, url)
            XCTAssertTrue(response.bodyString.contains("(wrong host)"), response.bodyString)
        }
        XCTAssertFalse(logs.lines(.warning, containing: "IP address mismatch").isEmpty, "\(logs.messages)")
        XCTAssertFalse(logs.lines(.warning, containing: "hostname mismatch").isEmpty, "\(logs.messages)")
        XCTAssertTrue(origin.accessLog().isEmpty, "no request may reach an unverified origin")
    }

    func testExpiredCertificateIsRefused() throws {
        _ = try TestFile.random(size: 1000, seed: 25, in: root, name: "a.bin")
        let origin = try origin(certificates.expired)
        let logs = LogCapture()
        let server = try proxy(logs: logs)
        let response = try RawHTTPClient.get(url: try server.proxyURL(for: origin.url("/a.bin")))
        XCTAssertEqual(response.status, 502)
        XCTAssertTrue(response.bodyString.contains("(expired): certificate has expired"), response.bodyString)
        XCTAssertFalse(logs.lines(.warning, containing: "certificate has expired").isEmpty, "\(logs.messages)")
    }

    func testTestCAIsRefusedWithoutCAFile() throws {
        _ = try TestFile.random(size: 1000, seed: 26, in: root, name: "a.bin")
        let origin = try origin(certificates.good)
        let logs = LogCapture()
        let server = try proxy(logs: logs) { $0.caFile = nil }
        let response = try RawHTTPClient.get(url: try server.proxyURL(for: origin.url("/a.bin")))
        XCTAssertEqual(response.status, 502)
        XCTAssertTrue(response.bodyString.contains("(unknown issuer): unable to get local issuer certificate"),
                      response.bodyString)
        XCTAssertFalse(logs.lines(.warning, containing: "unknown issuer").isEmpty, "\(logs.messages)")
    }

    func testInsecureTrustsAnyCertificateAndWarnsAtEveryStart() throws {
        let file = try TestFile.random(size: 100_000, seed: 27, in: root, name: "a.bin")
        let origin = try origin(certificates.wrongHost)
        let logs = LogCapture()
        let server = try proxy(logs: logs) {
            $0.caFile = nil
            $0.insecure = true
        }
        let response = try RawHTTPClient.get(url: try server.proxyURL(for: origin.url("/a.bin")))
        XCTAssertEqual(response.status, 200, response.bodyString)
        XCTAssertBytes(response.body, equal: file)
        server.close()
        let again = try MediaCache(configuration: server.configuration, logger: logs.logger)
        defer { again.close() }
        try again.serve()
        XCTAssertEqual(logs.lines(.warning, containing: "verification is OFF").count, 2, "\(logs.messages)")
    }

    func testUnreadableCAFileFailsTheStart() throws {
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.file("cache").path)
        configuration.caFile = directory.file("missing.pem").path
        XCTAssertThrowsError(try MediaCache(configuration: configuration)) { error in
            XCTAssertTrue("\(error)".contains("cannot load CA file"), "\(error)")
        }
    }

    func testStalledHandshakeIsBoundByTheConnectTimeout() throws {
        let silent = try SilentOrigin()
        defer { silent.stop() }
        let server = try proxy {
            $0.connectTimeout = 1
            $0.readTimeout = 30
        }
        let started = Date()
        let response = try RawHTTPClient.get(url: try server.proxyURL(for: "https://127.0.0.1:\(silent.port)/a.bin"))
        XCTAssertEqual(response.status, 504, response.bodyString)
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
    }
}
