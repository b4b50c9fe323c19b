import CacheHTTP

/// Runs a buffer-taking parser on the UTF-8 bytes of a string literal.
func withBytes<R>(_ s: String, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    Array(s.utf8).withUnsafeBytes(body)
}

func parseRequest(_ s: String, limits: HeadLimits = HeadLimits())
    -> Result<(head: HTTPRequestHead, consumed: Int)?, HeadParseError>
{
    withBytes(s) { RequestHeadParser.parse($0, limits: limits) }
}

func parseResponse(_ s: String, limits: HeadLimits = HeadLimits())
    -> Result<(head: HTTPResponseHead, consumed: Int)?, HeadParseError>
{
    withBytes(s) { ResponseHeadParser.parse($0, limits: limits) }
}

extension Result {
    var error: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
