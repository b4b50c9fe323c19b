import CacheIO

/// A whole-body rewrite of a body stored gzip (as object stores serve playlists): inflate, rewrite, deflate
/// again so the stored coding holds. Inflating stops at `cap` bytes (deflate expands at most ~1032:1, so the
/// time is bounded too); callers run it off the loop whatever the compressed size (`BodySource`).
package enum GzipRewrite {
    package enum Outcome: Sendable, Equatable {
        /// The bytes to serve: gzip again, or the input when the rewrite changed nothing.
        case rewritten([UInt8])
        /// Larger than `cap` once inflated, or not a valid gzip body.
        case undecodable
    }

    package static func apply(_ body: [UInt8], cap: Int = BodyTransform.rewriteCap,
                              _ rewrite: ([UInt8]) -> [UInt8]) -> Outcome {
        guard let plain = Gzip.decode(body, cap: cap) else { return .undecodable }
        let output = rewrite(plain)
        return .rewritten(output == plain ? body : Gzip.encode(output) ?? body)
    }
}
