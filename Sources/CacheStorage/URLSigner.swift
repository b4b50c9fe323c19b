import CacheHTTP
import CacheIO

/// Signs origin URLs for LAN-mode proxy URLs: HMAC-SHA256 under the folder's key over a version label
/// and the URL's UTF-8 bytes, 43 base64url characters. Only key holders (the proxy, `httpcache url
/// --cache-dir` by its user) mint accepted URLs: a LAN client fetches exactly the URLs it was given.
package struct URLSigner: Sendable {
    package static let signatureLength = 43  // 32 bytes in base64url, no padding
    /// Bound into every MAC so a signature never means anything else.
    private static let label = Array("httpcache-url-v1\u{0}".utf8)
    private let key: [UInt8]

    package init(key: [UInt8]) {
        precondition(key.count == 32, "a URL signing key is 32 bytes")
        self.key = key
    }

    package func signature(forOrigin origin: String) -> String {
        var out: [UInt8] = []
        Base64URL.encode(mac(origin), into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether `signature` is the one for `origin` (constant-time comparison).
    package func isValid<S: Collection<UInt8>>(signature: S, forOrigin origin: String) -> Bool {
        guard signature.count == Self.signatureLength, let given = Base64URL.decode(signature) else { return false }
        return ConstantTime.equal(given, mac(origin))
    }

    private func mac(_ origin: String) -> [UInt8] {
        var message = Self.label
        message.append(contentsOf: origin.utf8)
        // A failed MAC is 33 bytes, a length no decoded signature has: nothing matches it.
        return Digest.hmacSHA256(key: key, message: message) ?? [UInt8](repeating: 0, count: 33)
    }
}
