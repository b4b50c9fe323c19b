import CacheIO
import CSupport

/// One TLS client session over two memory BIOs, doing no I/O: the caller feeds it and
/// takes ciphertext, and exchanges plaintext with it. Loop thread only.
final class TLSSession {
    /// What an attempt to advance the session achieved.
    enum Progress {
        /// Handshake: finished. Reading: the peer sent close_notify.
        case done
        /// More ciphertext from the peer is needed.
        case wantsInput
        case failed(UpstreamError)
    }

    private let ssl: OpaquePointer
    /// Ciphertext from the peer, written by us and read by OpenSSL.
    private let input: OpaquePointer
    /// Ciphertext for the peer, written by OpenSSL and read by us.
    private let output: OpaquePointer
    private let host: String
    private(set) var isHandshakeDone = false

    /// For `host` (a name, or an IP literal without brackets): SNI for names; the certificate must match it.
    init(context: TLSContext, host: String, isIPLiteral: Bool) throws(UpstreamError) {
        guard let ssl = SSL_new(context.raw) else {
            throw .tls("cannot create a session: \(TLSContext.drainErrors())")
        }
        guard let input = BIO_new(BIO_s_mem()), let output = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw .tls("cannot create memory BIOs")
        }
        SSL_set_bio(ssl, input, output)  // the session owns both from here
        self.ssl = ssl
        self.input = input
        self.output = output
        self.host = host
        SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
        let checked = isIPLiteral ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
            : SSL_set1_host(ssl, host) & cs_ssl_set_sni(ssl, host)
        guard checked == 1 else {
            throw .tls("cannot set the expected host \(host): \(TLSContext.drainErrors())")
        }
        SSL_set_connect_state(ssl)
    }

    deinit { SSL_free(ssl) }

    /// Hands over ciphertext read from the socket.
    func receive(_ ciphertext: UnsafeRawBufferPointer) {
        guard let base = ciphertext.baseAddress, ciphertext.count > 0 else { return }
        // A memory BIO grows as needed: it takes everything.
        _ = BIO_write(input, base, Int32(ciphertext.count))
    }

    /// Ciphertext waiting to go to the socket, if any.
    func takeOutput() -> [UInt8]? {
        let pending = BIO_ctrl_pending(output)
        guard pending > 0 else { return nil }
        return [UInt8](unsafeUninitializedCapacity: pending) { buffer, count in
            count = Int(max(0, BIO_read(output, buffer.baseAddress, Int32(pending))))
        }
    }

    /// Advances the handshake with the ciphertext received so far.
    func handshake() -> Progress {
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            isHandshakeDone = true
            return .done
        }
        let code = SSL_get_error(ssl, result)
        if code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE { return .wantsInput }
        return .failed(.tls(handshakeFailure(code)))
    }

    /// Decrypts into `buffer`, calling `deliver` per piece, until it needs input, the peer
    /// closed, or `deliver` returns false.
    func read(into buffer: UnsafeMutableRawBufferPointer, _ deliver: (UnsafeRawBufferPointer) -> Bool) -> Progress {
        while true {
            ERR_clear_error()
            let count = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
            if count > 0 {
                guard deliver(UnsafeRawBufferPointer(rebasing: buffer[0..<Int(count)])) else { return .wantsInput }
                continue
            }
            switch SSL_get_error(ssl, count) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .wantsInput
            case SSL_ERROR_ZERO_RETURN: return .done
            default: return .failed(.tls("reading from \(host): \(TLSContext.drainErrors())"))
            }
        }
    }

    /// Encrypts plaintext; the ciphertext is then in `takeOutput()`.
    func write(_ plaintext: UnsafeRawBufferPointer) throws(UpstreamError) {
        guard let base = plaintext.baseAddress, plaintext.count > 0 else { return }
        ERR_clear_error()
        // Into a memory BIO a write never stops halfway.
        let written = SSL_write(ssl, base, Int32(plaintext.count))
        guard written == Int32(plaintext.count) else {
            throw .tls("writing to \(host): \(TLSContext.drainErrors())")
        }
    }

    /// Why the handshake failed, in words a log reader can act on.
    private func handshakeFailure(_ code: Int32) -> String {
        let verify = SSL_get_verify_result(ssl)
        if verify != Int(X509_V_OK) {
            let text = String(cString: X509_verify_cert_error_string(verify))
            return "certificate of \(host) refused (\(Self.category(of: Int32(verify)))): \(text)"
        }
        if code == SSL_ERROR_SYSCALL || code == SSL_ERROR_SSL {
            return "handshake with \(host) failed: \(TLSContext.drainErrors())"
        }
        return "handshake with \(host) failed (SSL error \(code))"
    }

    /// A short name for the verification errors people meet most.
    static func category(of code: Int32) -> String {
        switch code {
        case X509_V_ERR_CERT_HAS_EXPIRED: return "expired"
        case X509_V_ERR_CERT_NOT_YET_VALID: return "not yet valid"
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH: return "wrong host"
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT,
             X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
             X509_V_ERR_CERT_UNTRUSTED:
            return "unknown issuer"
        case X509_V_ERR_CERT_REVOKED: return "revoked"
        default: return "invalid"
        }
    }
}
