// The DASH MPD rewriter and reader. Beyond "no crash":
// - a rewrite that maps nothing gives back the input byte for byte (so does
//   one that finds no URL to map, whatever it would map to);
// - a rewrite that maps every URL to one fixed token changes nothing but
//   URLs: rewriting the result again gives the same bytes (idempotent);
// - reading the MPD, and a sidx box, either succeed or throw, never trap.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMPD(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzRun(data, size) { input in
        let bytes = Array(input)
        let base = "http://origin.example/a/b/manifest.mpd?token=1"
        if let same = try? DASH.rewrite(bytes, manifestURL: base, map: { _, _, _ in nil }) {
            fuzzCheck(same == bytes, "a rewrite that maps nothing changed the bytes")
        }
        let token = "http://proxy.example/t/x/$Number$&y"
        var mapped = 0
        if let once = try? DASH.rewrite(bytes, manifestURL: base, map: { _, _, _ in mapped += 1; return token }) {
            if mapped == 0 { fuzzCheck(once == bytes, "a rewrite that found no URL changed the bytes") }
            let twice = try? DASH.rewrite(once, manifestURL: base, map: { _, _, _ in token })
            fuzzCheck(twice == once, "rewriting a rewritten MPD changed it (or failed)")
        }
        _ = try? MPDManifest.parse(bytes, manifestURL: base, now: 1_767_225_700)  // 100 s after the seeds' availabilityStartTime
        _ = try? DASH.segments(fromIndex: bytes, url: base, indexRange: 100..<(100 + Int64(bytes.count)))
        _ = DASH.startsWithMPDRoot(bytes)
    }
}
