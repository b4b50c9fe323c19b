import CacheIO
@testable import CacheLoading

/// What the proxy serves for a stored body: `BodySource`'s gzip step
/// (`GzipRewrite`) around the transform, the stored bytes when it cannot inflate.
func served(_ transform: ManifestTransform, _ body: [UInt8]) -> [UInt8] {
    guard Gzip.isGzip(body) else { return transform.rewritten(body) }
    if case .rewritten(let bytes) = GzipRewrite.apply(body, transform.rewritten) { return bytes }
    return body
}
