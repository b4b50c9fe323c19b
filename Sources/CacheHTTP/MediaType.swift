/// "Video/MP4; codecs=x" → "video/mp4". No copy when already bare and lowercase (usual): it
/// runs for every origin response and every entry's first use.
package func bareMediaType(_ contentType: String) -> String {
    var text = contentType
    return text.withUTF8 { u in
        let bare = u[..<(u.firstIndex(of: UInt8(ascii: ";")) ?? u.count)].trimmingOWS()
        if bare.count == u.count, !bare.contains(where: { ASCII.lower($0) != $0 }) { return contentType }
        return String(decoding: bare.map(ASCII.lower), as: UTF8.self)
    }
}

/// After a UTF-8 BOM and, when `blanks`, whitespace: what sniffing a playlist or manifest skips.
package func textStart(_ bytes: UnsafeBufferPointer<UInt8>, skippingBlanks blanks: Bool) -> Int {
    var i = bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF ? 3 : 0
    while blanks, i < bytes.count, XMLText.isBlank(bytes[i]) { i += 1 }
    return i
}
