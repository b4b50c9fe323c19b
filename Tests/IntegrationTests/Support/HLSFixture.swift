import Foundation
import XCTest

/// HLS presentations made by ffmpeg at test time and served by nginx:
/// - `/hls/master.m3u8`: two MPEG-TS variants, relative variant URIs,
///   absolute segment URIs (`-hls_base_url`);
/// - `/hls/aes/index.m3u8`: AES-128, its key URI absolute (`/keys/aes.key`);
/// - `/hls/fmp4/index.m3u8`: fMP4 segments with an absolute EXT-X-MAP.
/// Each is 6 s of 320x240 test picture and a tone, in 2 s segments.
final class HLSFixture {
    let directory: TemporaryDirectory
    let root: URL
    let origin: NginxOrigin

    var master: String { origin.url("/hls/master.m3u8") }
    var aes: String { origin.url("/hls/aes/index.m3u8") }
    var fmp4: String { origin.url("/hls/fmp4/index.m3u8") }
    var keyURL: String { origin.url("/keys/aes.key") }

    init() throws {
        let ffmpeg = try TestTools.requireTool("ffmpeg")
        directory = try TemporaryDirectory(prefix: "hls-fixture")
        root = directory.file("www")
        origin = try NginxOrigin(root: root, start: false)
        let fm = FileManager.default
        for sub in ["hls/v0", "hls/v1", "hls/aes", "hls/fmp4", "keys"] {
            try fm.createDirectory(at: root.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        let base = "http://127.0.0.1:\(origin.port)"
        let input = ["-nostdin", "-hide_banner", "-loglevel", "error", "-y",
                     "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25:duration=6",
                     "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=6",
                     "-c:v", "libx264", "-preset", "ultrafast", "-g", "50", "-keyint_min", "50", "-sc_threshold", "0",
                     "-c:a", "aac", "-b:a", "64k"]
        let hls = ["-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod"]
        func path(_ p: String) -> String { root.appendingPathComponent(p).path }
        func make(_ extra: [String]) throws {
            let result = try TestTools.run(ffmpeg, input + extra, timeout: 120)
            guard result.succeeded else { throw TestSupportError("ffmpeg failed: \(result.stderr)") }
        }
        try make(["-b:v", "400k"] + hls + ["-hls_base_url", base + "/hls/v0/",
                                           "-hls_segment_filename", path("hls/v0/seg%d.ts"), path("hls/v0/index.m3u8")])
        try make(["-s", "160x120", "-b:v", "150k"] + hls + ["-hls_base_url", base + "/hls/v1/",
                                                           "-hls_segment_filename", path("hls/v1/seg%d.ts"), path("hls/v1/index.m3u8")])
        try Data("""
        #EXTM3U
        #EXT-X-VERSION:3
        #EXT-X-STREAM-INF:BANDWIDTH=600000,RESOLUTION=320x240
        v0/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=250000,RESOLUTION=160x120
        v1/index.m3u8

        """.utf8).write(to: root.appendingPathComponent("hls/master.m3u8"))
        // AES-128 with a fixed key and IV; the key URI is absolute.
        try Data((0..<16).map { UInt8($0 * 7 + 3) }).write(to: root.appendingPathComponent("keys/aes.key"))
        let keyInfo = directory.file("keyinfo")
        try Data("\(base)/keys/aes.key\n\(path("keys/aes.key"))\n000102030405060708090a0b0c0d0e0f\n".utf8).write(to: keyInfo)
        try make(["-b:v", "300k"] + hls + ["-hls_key_info_file", keyInfo.path,
                                           "-hls_segment_filename", path("hls/aes/seg%d.ts"), path("hls/aes/index.m3u8")])
        // fMP4, then its EXT-X-MAP made absolute.
        try make(["-b:v", "300k"] + hls + ["-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "init.mp4",
                                           "-hls_segment_filename", path("hls/fmp4/seg%d.m4s"), path("hls/fmp4/index.m3u8")])
        let fmp4Playlist = root.appendingPathComponent("hls/fmp4/index.m3u8")
        let text = try String(contentsOf: fmp4Playlist, encoding: .utf8)
        guard text.contains("#EXT-X-MAP:URI=\"init.mp4\"") else { throw TestSupportError("unexpected fMP4 playlist: \(text)") }
        try Data(text.replacingOccurrences(of: "#EXT-X-MAP:URI=\"init.mp4\"",
                                           with: "#EXT-X-MAP:URI=\"\(base)/hls/fmp4/init.mp4\"").utf8).write(to: fmp4Playlist)
        try origin.start()
    }

    /// `ffmpeg -i URL -f framemd5 -`: one checksum per decoded frame (video and audio).
    static func frameMD5(_ url: String) throws -> [String] {
        let ffmpeg = try TestTools.requireTool("ffmpeg")
        let result = try TestTools.run(ffmpeg, ["-nostdin", "-hide_banner", "-loglevel", "error", "-rw_timeout", "15000000",
                                                "-i", url, "-f", "framemd5", "-"], timeout: 120)
        guard result.succeeded else { throw TestSupportError("ffmpeg could not play \(url): \(result.stderr)") }
        let lines = result.stdout.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") }
        return lines
    }

    /// The file behind an origin URL of this fixture.
    func file(for url: String) -> URL? {
        let prefix = "http://127.0.0.1:\(origin.port)/"
        guard url.hasPrefix(prefix) else { return nil }
        let path = url.dropFirst(prefix.count).prefix { $0 != "?" }
        return root.appendingPathComponent(String(path))
    }
}
