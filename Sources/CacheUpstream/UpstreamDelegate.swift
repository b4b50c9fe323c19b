import CacheHTTP

/// Receives one origin response, on the loop thread; after the task's `cancel()` no call arrives.
package protocol UpstreamResponseDelegate: AnyObject {
    /// An interim (1xx) response before the final one. Default: ignored.
    func upstreamDidReceiveInterim(_ head: HTTPResponseHead)
    /// The final (non-1xx) response head.
    func upstreamDidReceiveHead(_ head: HTTPResponseHead)
    /// Body bytes, de-chunked; valid only during the call.
    func upstreamDidReceiveBody(_ bytes: UnsafeRawBufferPointer)
    /// The body ended (nil) or the exchange failed. Exactly once.
    func upstreamDidFinish(_ error: UpstreamError?)
}

extension UpstreamResponseDelegate {
    /// Caching downloads have no client to relay interim responses to.
    package func upstreamDidReceiveInterim(_ head: HTTPResponseHead) {}
}
