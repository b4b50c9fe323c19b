// hc_set_decryption: the host's hc_decrypt_fn as a DecryptionProvider; the Swift API does the rest.
import HTTPCache

/// hc_decrypt_fn of include/httpcache.h.
public typealias HCDecryptFunction = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?,
                                                     UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt8>?) -> Int32

/// The HC_CIPHER_* values of include/httpcache.h.
private enum CCipher: Int32 {
    case plain = 0, aes128CTR = 1, aes128ECB = 2
}

/// The host's callback and userdata; the host promises they may be called from any library thread.
private struct DecryptCallback: @unchecked Sendable {
    let function: HCDecryptFunction
    let userdata: UnsafeMutableRawPointer?

    func decryption(for url: String) throws(HTTPCacheError) -> Decryption? {
        var key = [UInt8](repeating: 0, count: 16)
        var iv = [UInt8](repeating: 0, count: 16)
        let answer = key.withUnsafeMutableBufferPointer { key in
            iv.withUnsafeMutableBufferPointer { iv in function(userdata, url, key.baseAddress, iv.baseAddress) }
        }
        switch CCipher(rawValue: answer) {
        case .plain?: return nil
        case .aes128CTR?: return .aes128CTR(key: key, iv: iv)
        case .aes128ECB?: return .aes128ECB(key: key)
        case nil:
            // The header: a negative return fails the resource with HC_EINVAL; so does an unknown cipher.
            throw HTTPCacheError(.invalidArgument, "the decryption callback returned \(answer) for \(url)")
        }
    }
}

@c public func hc_set_decryption(_ cache: OpaquePointer?, _ function: HCDecryptFunction?,
                                 _ userdata: UnsafeMutableRawPointer?) -> Int32 {
    guard let handle = CacheHandle.from(cache) else { return hcInvalid }
    let provider: DecryptionProvider? = function.map { function in
        let callback = DecryptCallback(function: function, userdata: userdata)
        return { url in try callback.decryption(for: url) }
    }
    return cResult { () throws(HTTPCacheError) in try handle.cache.setDecryption(provider) }
}
