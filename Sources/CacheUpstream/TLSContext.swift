import CacheIO
import CSupport

/// An OpenSSL client context (trust store, minimum version, verification), one per
/// client. Never changed after `init`, so any thread may make sessions: unchecked Sendable.
package final class TLSContext: @unchecked Sendable {
    /// The `SSL_CTX`.
    let raw: OpaquePointer

    /// Trusts the system CA store plus `settings.caFile`, TLS 1.2 at least,
    /// and verifies peers unless `settings.verifyCertificates` is false.
    package init(settings: TLSSettings) throws(UpstreamError) {
        guard let method = TLS_client_method(), let context = SSL_CTX_new(method) else {
            throw .configuration("cannot create a TLS context: \(TLSContext.drainErrors())")
        }
        raw = context
        guard cs_ssl_ctx_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
            throw .configuration("cannot require TLS 1.2: \(TLSContext.drainErrors())")
        }
        // The system store; a missing one only means fewer trusted roots.
        if SSL_CTX_set_default_verify_paths(context) != 1 { ERR_clear_error() }
        if let caFile = settings.caFile {
            guard SSL_CTX_load_verify_file(context, caFile) == 1 else {
                throw .configuration("cannot load CA file \(caFile): \(TLSContext.drainErrors())")
            }
        }
        SSL_CTX_set_verify(context, settings.verifyCertificates ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nil)
        cs_ssl_ctx_release_buffers(context)
    }

    deinit { SSL_CTX_free(raw) }

    /// OpenSSL's queued error messages (this thread's), oldest first; empties the queue.
    static func drainErrors() -> String {
        var messages: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while case let code = ERR_get_error(), code != 0 {
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(cChars: buffer))
        }
        return messages.isEmpty ? "unknown error" : messages.joined(separator: "; ")
    }
}
