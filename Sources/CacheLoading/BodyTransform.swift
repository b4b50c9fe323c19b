
/// What stands between a resource's cached bytes and what a client gets:
/// a closed set, chosen once per response (or reader range). The cache always
/// keeps the origin's bytes; a transform runs on the way out.
///
/// - `decrypt` maps 1:1 over cipher blocks: lengths and ranges are kept, the
///   input is widened to whole blocks and the output cut back (`BodyPipeline`).
/// - `rewriteManifest` (HLS playlists, DASH MPDs: `ManifestTransform`)
///   rewrites the whole body: it is read first, rewritten, and the client's
///   range applies to the output.
///
/// Loop thread only (a decryptor carries partial blocks between pieces).
package enum BodyTransform {
    case none
    case decrypt(DecryptTransform)
    case rewriteManifest(ManifestTransform)

    /// The largest body a whole-body rewrite reads into memory; a larger one
    /// passes through unrewritten (with a warning), so no client can make the
    /// proxy hold an unbounded body.
    package static let rewriteCap = 16 << 20

    package var isNone: Bool { if case .none = self { true } else { false } }

    /// The rewrite of a whole body, for the whole-body cases; nil for the others.
    /// Sendable: a large body is rewritten off the loop.
    package var rewrite: (@Sendable ([UInt8]) -> [UInt8])? {
        switch self {
        case .none, .decrypt: return nil
        case .rewriteManifest(let manifest): return { manifest.rewritten($0) }
        }
    }

    /// The content information the client sees. A whole-body rewrite drops
    /// the validators (its output depends on the client's Host, and a strong
    /// ETag names one exact body); its length is set from the output.
    package func outputInfo(_ stored: ContentInfo) -> ContentInfo {
        guard rewrite != nil else { return stored }
        var info = stored
        info.etag = nil
        return info
    }

    /// The input bytes needed for `output` (a mapping transform reads whole cipher blocks).
    package func inputRange(forOutput output: Range<Int64>, totalLength: Int64?) -> Range<Int64> {
        guard case .decrypt = self else { return output }
        return DecryptTransform.inputRange(forOutput: output, totalLength: totalLength)
    }
}

/// Why a transform could not produce its output.
package struct TransformError: Error, CustomStringConvertible, Sendable {
    package let description: String
    package init(_ description: String) { self.description = description }
}

extension Engine {
    /// The transform of one body of `url`: decryption when the host's lookup
    /// names a key for it, else `rewrite` (the proxy's rewrite of an HLS
    /// playlist or a DASH manifest, built only when asked), else none.
    package func transform(url: String, rewrite: () -> BodyTransform? = { nil })
        -> Result<BodyTransform, DecryptionSetupError> {
        loop.assertInLoop()
        if let decryption {
            switch DecryptTransform.make(url: url, lookup: decryption) {
            case .failure(let error): return .failure(error)
            case .success(let transform?): return .success(.decrypt(transform))
            case .success(nil): break
            }
        }
        return .success(rewrite() ?? .none)
    }
}
