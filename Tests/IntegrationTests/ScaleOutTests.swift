import Foundation
import HTTPCache
import XCTest

/// Two proxies behind nginx balancing on `hash $request_uri consistent`, the
/// setup of docs/SCALE-OUT.md: every resource lives on one node and is fetched
/// from the origin once, however many clients ask and through whichever
/// balancer connection; when a node leaves, only its resources move.
final class ScaleOutTests: XCTestCase {
    /// The balancer's upstream, as in docs/SCALE-OUT.md (ports filled in).
    static func balancerUpstream(ports: [Int]) -> String {
        """
            upstream httpcache {
                hash $request_uri consistent;
        \(ports.map { "        server 127.0.0.1:\($0);" }.joined(separator: "\n"))
                keepalive 32;
            }
        """
    }

    /// The balancer's location, as in docs/SCALE-OUT.md.
    static let balancerLocation = """
            location / {
                proxy_pass http://httpcache;
                proxy_http_version 1.1;
                proxy_set_header Connection "";
                proxy_set_header Host $http_host;
                proxy_buffering off;
            }
        """

    private var www: TemporaryDirectory!
    /// The balancer's root: it serves nothing itself.
    private var balancerRoot: TemporaryDirectory!
    private var origin: NginxOrigin!
    private var nodes: [TestProxy] = []
    private var balancer: NginxOrigin!
    private var files: [TestFile] = []
    /// The proxy URL path of each file: the same on every node.
    private var paths: [String] = []

    override func setUpWithError() throws {
        _ = try TestTools.requireTool("nginx")
        www = try TemporaryDirectory(prefix: "scale-out-www")
        // 16 resources: the chance that the hash puts all of them on one node is 2^-15.
        files = try (0..<16).map {
            try TestFile.random(size: 40_000 + $0 * 7_001, seed: UInt64(500 + $0), in: www.url, name: "clip-\($0).mp4")
        }
        origin = try NginxOrigin(root: www.url)
        nodes = [try TestProxy(), try TestProxy()]
        paths = try files.map { try RawHTTPClient.parse(url: try nodes[0].url(for: origin.url($0.name))).path }
        balancerRoot = try TemporaryDirectory(prefix: "scale-out-balancer")
        balancer = try NginxOrigin(root: balancerRoot.url, extraServerConfig: Self.balancerLocation,
                                   extraHTTPConfig: Self.balancerUpstream(ports: nodes.map(\.server.servingPort)))
    }

    override func tearDown() {
        balancer = nil
        nodes = []
        origin = nil
        www = nil
        balancerRoot = nil
    }

    func testEachResourceIsFetchedOnceAndCachedOnOneNode() throws {
        // Every resource asked for twice at once: both requests reach the same node.
        let firstRound = (files.indices.map { Request(file: $0, range: nil) }) + files.indices.map { Request(file: $0, range: nil) }
        XCTAssertEqual(fetchAll(firstRound.shuffled(), workers: 6), [])
        // Then many hits: whole resources and ranges, from 6 clients at once.
        var generator = RequestMix(seed: 42)
        let hits = (0..<240).map { _ -> Request in
            let file = Int(generator.next() % UInt64(files.count))
            guard generator.next() % 3 != 0 else { return Request(file: file, range: nil) }
            let size = files[file].size
            let first = Int(generator.next() % UInt64(size))
            let last = min(size - 1, first + Int(generator.next() % 20_000))
            return Request(file: file, range: first...last)
        }
        XCTAssertEqual(fetchAll(hits, workers: 6), [])

        // The origin saw each resource exactly once.
        let log = origin.accessLog(waitingFor: files.count)
        for file in files {
            XCTAssertEqual(log.filter { $0.uri == "/" + file.name }.count, 1, "origin requests for \(file.name)")
        }
        XCTAssertEqual(log.count, files.count, "\(log.map(\.uri))")

        // Each node holds only its share: no resource on both, none missing, both used.
        let shares = nodes.map { node in Set(node.server.cachedResources().filter(\.isComplete).map(\.url)) }
        XCTAssertTrue(shares[0].isDisjoint(with: shares[1]), "on both nodes: \(shares[0].intersection(shares[1]))")
        XCTAssertEqual(shares[0].union(shares[1]), Set(files.map { origin.url($0.name) }))
        XCTAssertFalse(shares[0].isEmpty, "the hash sent nothing to node 0")
        XCTAssertFalse(shares[1].isEmpty, "the hash sent nothing to node 1")
        // The balancer answered every request (200 or 206), through the nodes.
        let balanced = balancer.accessLog(waitingFor: firstRound.count + hits.count)
        XCTAssertEqual(balanced.count, firstRound.count + hits.count)
        XCTAssertTrue(balanced.allSatisfy { $0.status == 200 || $0.status == 206 }, "\(balanced.map(\.status))")
    }

    func testWhenANodeLeavesOnlyItsResourcesMove() throws {
        XCTAssertEqual(fetchAll(files.indices.map { Request(file: $0, range: nil) }, workers: 4), [])
        let staying = Set(nodes[0].server.cachedResources().map(\.url))
        let leaving = Set(nodes[1].server.cachedResources().map(\.url))
        XCTAssertFalse(staying.isEmpty)
        XCTAssertFalse(leaving.isEmpty)
        _ = origin.accessLog(waitingFor: files.count)
        origin.clearAccessLog()

        nodes[1].server.close()
        XCTAssertEqual(fetchAll(files.indices.map { Request(file: $0, range: nil) }, workers: 4), [])

        // The staying node's resources were hits; only the leaving node's went to the origin, once each.
        let log = origin.accessLog(waitingFor: leaving.count)
        XCTAssertEqual(Set(log.map { origin.url($0.uri) }), leaving)
        XCTAssertEqual(log.count, leaving.count, "\(log.map(\.uri))")
        XCTAssertEqual(Set(nodes[0].server.cachedResources().map(\.url)), staying.union(leaving))
    }

    // MARK: helpers

    private struct Request: Sendable {
        var file: Int
        var range: ClosedRange<Int>?
    }

    /// Runs the requests through the balancer from `workers` threads, each on
    /// its own keep-alive connection; returns what went wrong (empty: all bytes right).
    private func fetchAll(_ requests: [Request], workers: Int) -> [String] {
        let port = balancer.port, files = self.files, paths = self.paths
        let failures = Failures()
        let group = DispatchGroup()
        for worker in 0..<workers {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                var connection: RawHTTPConnection?
                for (i, request) in requests.enumerated() where i % workers == worker {
                    let file = files[request.file]
                    do {
                        if connection == nil { connection = try RawHTTPConnection(port: port, timeout: 20) }
                        let response = try connection!.get(
                            paths[request.file], range: request.range.map { "bytes=\($0.lowerBound)-\($0.upperBound)" })
                        let expected = request.range.map { Array(file.slice($0)) } ?? file.bytes
                        if response.status != (request.range == nil ? 200 : 206) || response.body != expected {
                            failures.add("\(file.name) \(request.range.map { "\($0)" } ?? "whole"): status \(response.status), \(response.body.count) bytes")
                        }
                        if response.header("Connection")?.lowercased() == "close" { connection = nil }
                    } catch {
                        failures.add("\(file.name): \(error)")
                        connection = nil
                    }
                }
            }
        }
        if group.wait(timeout: .now() + 60) == .timedOut { failures.add("requests did not finish within 60 s") }
        return failures.all
    }
}

/// Deterministic choices for the request mix (splitmix64).
private struct RequestMix {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
