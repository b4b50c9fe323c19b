/// The media type of a Content-Type value: "Video/MP4; codecs=x" → "video/mp4"
/// (parameters and blanks dropped, ASCII lowercased, other bytes kept). On the
/// bytes, and without a copy when already bare and lowercase (the usual case):
/// it runs for every response from an origin and every entry's first use.
package func bareMediaType(_ contentType: String) -> String {
    var text = contentType
    return text.withUTF8 { u in
        var hi = u.firstIndex(of: UInt8(ascii: ";")) ?? u.count
        var lo = 0
        while lo < hi, ASCII.isOWS(u[lo]) { lo += 1 }
        while hi > lo, ASCII.isOWS(u[hi - 1]) { hi -= 1 }
        let bare = UnsafeBufferPointer(rebasing: u[lo..<hi])
        if lo == 0, hi == u.count, !bare.contains(where: { ASCII.lower($0) != $0 }) { return contentType }
        return String(decoding: bare.map(ASCII.lower), as: UTF8.self)
    }
}

/// Where a text body's content starts: after a UTF-8 byte-order mark and,
/// when `blanks`, after spaces, tabs and line breaks. What sniffing a
/// playlist (`#EXTM3U`) or a manifest (`<`) looks past.
package func textStart(_ bytes: UnsafeBufferPointer<UInt8>, skippingBlanks blanks: Bool) -> Int {
    var i = bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF ? 3 : 0
    while blanks, i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0A || bytes[i] == 0x0D { i += 1 }
    return i
}
