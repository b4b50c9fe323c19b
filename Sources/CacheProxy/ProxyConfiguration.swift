import CacheLoading
import CacheUpstream

/// Everything the proxy needs to run.
package struct ProxyConfiguration: Sendable {
    package var host = "127.0.0.1"
    package var port = 0
    package var cacheDirectory: String
    package var upstream = UpstreamConfiguration()
    /// The most bytes the cache keeps once downloads settle.
    package var maxCacheBytes: Int64 = 500_000_000
    /// What is cached and how often cached resources are checked.
    package var policy = LoaderPolicy()
    /// Milliseconds an idle keep-alive client connection is kept.
    package var keepAliveTimeout: UInt64 = 60_000
    /// Milliseconds a client has to send a complete request head.
    package var requestHeadTimeout: UInt64 = 30_000
    /// Maps an origin URL to its cache key (several URLs may share one entry).
    package var cacheKey: @Sendable (String) -> String = { $0 }
    /// Chooses a body transform per response (HLS rewriting, decryption); nil: none.
    package var transforms: TransformProvider?

    package init(cacheDirectory: String) {
        self.cacheDirectory = cacheDirectory
    }
}
