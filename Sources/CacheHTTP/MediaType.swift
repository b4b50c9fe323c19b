/// The media type of a Content-Type value: "Video/MP4; codecs=x" → "video/mp4"
/// (parameters and blanks dropped, ASCII lowercased, other bytes kept). On the
/// bytes: it runs for every response from an origin.
package func bareMediaType(_ contentType: String) -> String {
    let u = Array(contentType.utf8)
    var hi = u.firstIndex(of: UInt8(ascii: ";")) ?? u.count
    var lo = 0
    while lo < hi, ASCII.isOWS(u[lo]) { lo += 1 }
    while hi > lo, ASCII.isOWS(u[hi - 1]) { hi -= 1 }
    return String(decoding: u[lo..<hi].map(ASCII.lower), as: UTF8.self)
}
