import CacheHTTP
import CacheIO

/// One GET to an origin. Cancel it to stop receiving; the connection is
/// then dropped (a half-read body cannot be reused).
package final class UpstreamTask {
    package let url: OriginURL
    let request: [UInt8]
    let method: String
    weak var delegate: UpstreamResponseDelegate?
    weak var client: UpstreamClient?
    var connection: UpstreamConnection?
    package private(set) var isFinished = false
    /// Whether a reused connection may still be replaced by a fresh one.
    var mayRetry = true

    init(url: OriginURL, method: String, request: [UInt8], delegate: UpstreamResponseDelegate, client: UpstreamClient) {
        self.url = url
        self.method = method
        self.request = request
        self.delegate = delegate
        self.client = client
    }

    /// Stops the exchange; no delegate call follows.
    package func cancel() {
        guard !isFinished else { return }
        isFinished = true
        delegate = nil
        connection?.abandon()
        connection = nil
    }

    func finish(_ error: UpstreamError?) {
        guard !isFinished else { return }
        isFinished = true
        let delegate = self.delegate
        self.delegate = nil
        connection = nil
        delegate?.upstreamDidFinish(error)
    }
}
