import CacheHTTP
import CacheIO

/// One GET to an origin, following redirects. Cancel it to stop receiving;
/// the connection is then dropped (a half-read body cannot be reused).
package final class UpstreamTask {
    /// The URL asked for.
    package let originalURL: OriginURL
    /// The URL being fetched; once the head arrived, the final one.
    package private(set) var url: OriginURL
    let method: String
    /// The caller's fields (Range, forwarded client fields).
    let headers: HTTPHeaders
    private(set) var request: [UInt8] = []
    weak var delegate: UpstreamResponseDelegate?
    weak var client: UpstreamClient?
    var connection: UpstreamConnection?
    package private(set) var isFinished = false
    /// Whether a reused connection may still be replaced by a fresh one.
    var mayRetry = true
    /// False when redirects go to the delegate as they are.
    var followsRedirects = true
    /// Redirect hops taken so far.
    package private(set) var hops = 0
    private var chain: [String]
    /// Where to go once the body of the current response has been skipped.
    private var next: OriginURL?
    private var skipped = 0
    /// True while the first hop goes to a remembered redirect target.
    private var fromMemory: Bool
    private var headDelivered = false

    /// A redirect body longer than this is not worth reading to keep the connection.
    private static let maxSkippedBody = 64 << 10

    /// The request body (pass-through requests), sent with Content-Length.
    let body: [UInt8]?

    init(url: OriginURL, start: OriginURL, method: String, headers: HTTPHeaders,
         delegate: UpstreamResponseDelegate, client: UpstreamClient, body: [UInt8]? = nil) {
        self.body = body
        self.originalURL = url
        self.url = start
        self.method = method
        self.headers = headers
        self.delegate = delegate
        self.client = client
        fromMemory = start != url
        chain = [url.string]
        request = client.requestBytes(for: self)
    }

    /// Milliseconds until the asking player's buffer runs dry (CMCD `dl`); read when waiting for a slot.
    var playerDeadline: UInt64? {
        let target = originalURL.pathAndQuery
        guard CMCD.mayBePresent(target: target, headers: headers),
              let deadline = CMCD.parse(target: target, headers: headers)?.integer(.deadline), deadline >= 0 else { return nil }
        return UInt64(deadline)
    }

    /// Stops taking body bytes until `resume()` (the consumer is full).
    package func pause() { connection?.pause() }
    package func resume() { connection?.resume() }

    /// Stops the exchange; no delegate call follows.
    package func cancel() {
        guard !isFinished else { return }
        isFinished = true
        delegate = nil
        connection?.abandon()
        connection = nil
    }

    /// The current hop's head: true when its body is for the delegate, false when skipped (a redirect).
    func didReceiveHead(_ head: HTTPResponseHead) -> Bool {
        if followsRedirects, Redirects.isRedirect(head.status), let location = head.headers["location"] {
            switch Redirects.target(of: location, from: url, chain: chain, hops: hops,
                                    limit: client?.configuration.maxRedirects ?? 10) {
            case .success(let target):
                client?.logRedirect(head.status, from: url, to: target)
                next = target
                return false
            case .failure(let error):
                fail(error)
                return false
            }
        }
        if fromMemory && head.status >= 400 && head.status != 416 {
            // The remembered target went bad (an expired signed URL, say): start over.
            client?.forgetRedirect(from: originalURL)
            fromMemory = false
            next = originalURL
            return false
        }
        headDelivered = true
        if url != originalURL && (head.status < 300 || head.status == 416) {
            client?.redirects.remember(originalURL, target: url)
        }
        delegate?.upstreamDidReceiveHead(head)
        return true
    }

    /// Body bytes of a response being skipped.
    func didSkipBody(_ count: Int) {
        skipped += count
        if skipped > Self.maxSkippedBody, let connection {
            connection.abandon()
            exchangeDidComplete()
        }
    }

    /// The current exchange ended cleanly: follow the redirect, or finish.
    func exchangeDidComplete() {
        guard !isFinished else { return }
        guard let target = next else { return finish(nil) }
        if target == originalURL {
            chain = [originalURL.string]
            hops = 0
        } else {
            chain.append(target.string)
            hops += 1
        }
        next = nil
        skipped = 0
        connection = nil
        mayRetry = true
        url = target
        guard let client else { return finish(.redirect("client gone")) }
        request = client.requestBytes(for: self)
        client.dispatch(self)
    }

    /// An unreachable remembered redirect target is forgotten, the original URL tried.
    func fail(_ error: UpstreamError) {
        guard !isFinished else { return }
        connection?.abandon()
        if fromMemory && !headDelivered && !error.isTimeout, let client {
            client.forgetRedirect(from: originalURL)
            fromMemory = false
            next = originalURL
            return exchangeDidComplete()
        }
        finish(error)
    }

    private func finish(_ error: UpstreamError?) {
        guard !isFinished else { return }
        isFinished = true
        let delegate = self.delegate
        self.delegate = nil
        connection = nil
        delegate?.upstreamDidFinish(error)
    }
}
