import CacheHTTP

/// Receives one origin response. Calls arrive on the loop thread; after
/// `cancel()` on the task no further call arrives.
package protocol UpstreamResponseDelegate: AnyObject {
    /// The final (non-1xx) response head.
    func upstreamDidReceiveHead(_ head: HTTPResponseHead)
    /// Body bytes, de-chunked; valid only during the call.
    func upstreamDidReceiveBody(_ bytes: UnsafeRawBufferPointer)
    /// The body ended (nil) or the exchange failed. Exactly once.
    func upstreamDidFinish(_ error: UpstreamError?)
}
