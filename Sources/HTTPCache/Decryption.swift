import CacheIO
import CacheLoading

/// How one origin resource is encrypted: readers and proxy clients get plaintext, the cache keeps
/// the origin's ciphertext.
///
/// Decryption runs on the way out, for any byte range (widened to whole 16-byte blocks, decrypted,
/// cut back). Lengths, `Content-Range` and reader offsets are the same as in ciphertext (1:1).
///
/// **A wrong key is not detected**: CTR and ECB carry no integrity check, so a wrong key or IV
/// yields wrong bytes of the right length. Verify the plaintext (checksum, container parse) if needed.
public struct Decryption: Sendable, Equatable {
    public enum Cipher: Sendable, Equatable {
        /// AES-128 in counter mode: the IV is the initial counter block, counting up as one
        /// big-endian 128-bit integer (as `openssl enc -aes-128-ctr`). Any length.
        case aes128CTR
        /// AES-128-ECB without padding (`openssl enc -aes-128-ecb -nopad`): lengths are multiples of 16.
        case aes128ECB
    }

    public var cipher: Cipher
    /// 16 bytes.
    public var key: [UInt8]
    /// 16 bytes for CTR (the counter block of byte 0); empty for ECB.
    public var iv: [UInt8]

    public init(cipher: Cipher, key: [UInt8], iv: [UInt8] = []) {
        self.cipher = cipher
        self.key = key
        self.iv = iv
    }

    /// AES-128-CTR with this key and initial counter block.
    public static func aes128CTR(key: [UInt8], iv: [UInt8]) -> Decryption {
        Decryption(cipher: .aes128CTR, key: key, iv: iv)
    }

    /// AES-128-ECB (no padding) with this key.
    public static func aes128ECB(key: [UInt8]) -> Decryption { Decryption(cipher: .aes128ECB, key: key) }

    var spec: DecryptionSpec {
        DecryptionSpec(kind: cipher == .aes128CTR ? .aes128CTR : .aes128ECB, key: key, iv: iv)
    }
}

/// Chooses a resource's decryption by its origin URL (as given to `proxyURL(for:)`/`openReader`,
/// before redirects); nil: served as is.
///
/// Called on the resource's loop thread as a response or reader starts (several threads at once
/// with several loops): keep it quick. Throwing fails that response (500 with the reason) or reader
/// (the error, or `.invalidArgument` if not an `HTTPCacheError`), cached bytes untouched; so does a
/// key or CTR IV that is not 16 bytes.
public typealias DecryptionProvider = @Sendable (String) throws -> Decryption?

extension HTTPCacheConfiguration {
    /// The provider as the engine asks it.
    static func lookup(_ provider: DecryptionProvider?) -> DecryptionLookup? {
        guard let provider else { return nil }
        return { url in try provider(url)?.spec }
    }
}
