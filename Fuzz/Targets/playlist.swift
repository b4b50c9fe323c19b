// The HLS playlist rewriter and parser. Beyond "no crash":
// - a rewrite that maps nothing gives back the input byte for byte;
// - a rewrite that maps every URI to one fixed token changes nothing but
//   URIs: mapping the result again gives the same bytes (idempotent);
// - parsing either accepts or throws, never traps.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPlaylist(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzRun(data, size) { input in
        let bytes = Array(input)
        let base = "http://origin.example/a/b/master.m3u8?token=1"
        if let same = try? HLS.rewrite(bytes, playlistURL: base, map: { _, _ in nil }) {
            fuzzCheck(same == bytes, "a rewrite that maps nothing changed the bytes")
        }
        let token = "http://proxy.example/p/x"
        if let once = try? HLS.rewrite(bytes, playlistURL: base, map: { _, _ in token }) {
            if let twice = try? HLS.rewrite(once, playlistURL: base, map: { _, _ in token }) {
                fuzzCheck(twice == once, "rewriting a rewritten playlist changed it")
            }
        }
        _ = try? HLSPlaylist.parse(bytes, playlistURL: base)
    }
}
