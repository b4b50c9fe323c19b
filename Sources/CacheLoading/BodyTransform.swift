/// A stage between the cached bytes of a resource and what a client gets.
///
/// The cache always keeps the origin's bytes; a transform runs on the way out
/// (HLS playlists are rewritten, encrypted media is decrypted). Without one,
/// hits stay zero-copy (sendfile); with one, the bytes are read, transformed
/// and written. Two shapes exist:
/// - *mapping* (`buffersWhole == false`): output byte `i` depends only on the
///   input block holding byte `i`, so lengths are kept; the planner widens the
///   input range with `inputRange(forOutput:totalLength:)` (whole cipher
///   blocks) and the output is cut back to the asked range;
/// - *buffering* (`buffersWhole == true`): the whole body is read first and
///   the output (with its own length and type) exists only at `finish`; the
///   client's range then applies to the output (a playlist is small).
///
/// Used by one response on the loop thread, never shared.
package protocol BodyTransform: AnyObject {
    var buffersWhole: Bool { get }
    /// The content information the client sees (a new type, say). For a
    /// buffering transform the length is set from the output by the caller.
    func outputInfo(_ stored: ContentInfo) -> ContentInfo
    /// The input bytes needed to produce `range` of the output (mapping only).
    func inputRange(forOutput range: Range<Int64>, totalLength: Int64?) -> Range<Int64>
    /// Input bytes at `offset`; calls come in order and are contiguous. A
    /// mapping transform appends exactly as many output bytes, a buffering
    /// one usually nothing.
    func process(_ input: UnsafeRawBufferPointer, at offset: Int64, into output: inout [UInt8]) throws(TransformError)
    /// The input ended: append whatever is left (a buffering transform: all of it).
    func finish(into output: inout [UInt8]) throws(TransformError)
}

/// Why a transform could not produce its output.
package struct TransformError: Error, CustomStringConvertible, Sendable {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// What a transform is chosen by.
package struct TransformContext: Sendable {
    /// The origin URL asked for (before redirects).
    package var url: String
    /// The stored head of the resource.
    package var info: ContentInfo
    /// The Host the client reached the proxy with (proxy URLs in a rewritten
    /// playlist must use it), when it sent one.
    package var clientHost: String?
    /// Where the origin URL led after redirects, when it was redirected
    /// (relative URIs in a playlist resolve against it).
    package var finalURL: String?
    /// The body's first bytes when they are already cached (sniffing a
    /// generic type); nil when not.
    package var bodyPrefix: [UInt8]?
    /// The URL's path and query, when the caller has the URL parsed already.
    package var path: String?
    /// Whether the response is an HLS playlist, when the caller decided it already.
    package var isPlaylist: Bool?
    /// How the request reached the proxy when it was not by a proxy URL: a
    /// forward-proxy request wants URIs left as they are, a reverse-proxy one
    /// wants the origin's host replaced by the proxy's. Nil: the provider's own mode.
    package var requestMode: HLSRewriteMode?
    /// How an origin URL in a rewritten playlist becomes a path on this
    /// proxy; nil: the unsigned proxy URL. In LAN mode it signs, and gives
    /// nil for destinations the policy refuses (the URI is then left as
    /// written: a playlist must not make the proxy sign any address).
    package var proxyPath: (@Sendable (String) -> String?)?
    package init(url: String, path: String? = nil, info: ContentInfo, clientHost: String?, finalURL: String? = nil,
                 bodyPrefix: [UInt8]? = nil) {
        self.path = path
        self.url = url
        self.info = info
        self.clientHost = clientHost
        self.finalURL = finalURL
        self.bodyPrefix = bodyPrefix
    }
}

/// Chooses the transform for a response; nil keeps the zero-copy path.
/// Called on the loop thread.
package typealias TransformProvider = @Sendable (TransformContext) -> BodyTransform?
