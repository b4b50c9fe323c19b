/// What stands between the cached (origin's) bytes and what a client gets, chosen once per response or reader
/// range: `decrypt` maps 1:1 over cipher blocks (lengths, ranges kept); `rewriteManifest` rewrites the whole
/// body, the client's range applying to the output. Loop thread only (a decryptor carries partial blocks).
package enum BodyTransform {
    case none
    case decrypt(DecryptTransform)
    case rewriteManifest(ManifestTransform)

    /// The largest body a rewrite reads into memory; a larger one passes unrewritten, so
    /// no client can make the proxy hold an unbounded body.
    package static let rewriteCap = 16 << 20

    package var isNone: Bool { if case .none = self { true } else { false } }

    /// The whole-body rewrite, if any; Sendable: a large body is rewritten off the loop.
    package var rewrite: (@Sendable ([UInt8]) -> [UInt8])? {
        switch self {
        case .none, .decrypt: return nil
        case .rewriteManifest(let manifest): return { manifest.rewritten($0) }
        }
    }

    /// What the client sees: a rewrite drops the ETag (its output depends on the Host).
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
    /// Decryption when the host's lookup names a key for `url`, else `rewrite` (built when asked), else none.
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
