import CBenchSupport

/// The benchmarks' own origin (C, in this process): serves the fixture files,
/// counts the body bytes it sends and can be paced like a remote server.
final class Origin {
    private let raw: OpaquePointer

    init(root: String) throws {
        var message = [CChar](repeating: 0, count: 256)
        guard let origin = bs_origin_start(root, 0, &message, message.count) else {
            throw BenchError("cannot start the origin: \(String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
        }
        raw = origin
    }

    var port: Int { Int(bs_origin_port(raw)) }
    var baseURL: String { "http://127.0.0.1:\(port)" }
    var bodyBytes: UInt64 { bs_origin_body_bytes(raw) }
    var requests: UInt64 { bs_origin_requests(raw) }

    /// Bytes per second per connection; 0 is unpaced.
    func setRate(_ bytesPerSecond: UInt64) { bs_origin_set_rate(raw, bytesPerSecond) }

    /// Seconds before each file's head (a remote origin's time to first byte); 0 is none.
    func setLatency(_ seconds: Double) { bs_origin_set_latency(raw, UInt64(seconds * 1e9)) }

    /// Serves `file` under every path starting with `prefix`, with `Cache-Control: cacheControl`.
    func alias(_ prefix: String, to file: String, cacheControl: String) {
        bs_origin_set_alias(raw, prefix, file, cacheControl)
    }

    /// `Cache-Control: max-age=seconds` on every file (0: none).
    func setMaxAge(_ seconds: UInt64) { bs_origin_set_max_age(raw, seconds) }

    func stop() { bs_origin_stop(raw) }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
