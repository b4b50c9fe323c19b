import Foundation

/// One top-level ISO BMFF box ("atom").
struct MP4Atom: Sendable, Equatable {
    var type: String
    var offset: Int
    var size: Int
}

/// The parts of `ffprobe -show_format -show_streams` output tests need.
struct FFProbeInfo: Sendable {
    struct Stream: Sendable, Equatable {
        var index: Int
        var codecType: String
        var codecName: String
    }

    var formatName: String?
    var duration: Double?
    var streams: [Stream]
    /// The full JSON ffprobe printed.
    var json: String

    var hasVideo: Bool { streams.contains { $0.codecType == "video" } }
    var hasAudio: Bool { streams.contains { $0.codecType == "audio" } }
}

/// ffmpeg-made media fixtures and ffmpeg/ffprobe wrappers.
enum MediaFixtures {
    /// "libx264" when this ffmpeg has it, otherwise "mpeg4" (built in).
    static let videoEncoder: String = {
        guard let result = try? TestTools.run("ffmpeg", ["-hide_banner", "-encoders"], timeout: 30),
              result.succeeded else { return "mpeg4" }
        let hasX264 = result.stdout.split(separator: "\n").contains {
            $0.split(separator: " ").dropFirst().first == "libx264"
        }
        return hasX264 ? "libx264" : "mpeg4"
    }()

    /// Makes an MP4 (video testsrc2 + 440 Hz sine AAC) of `duration` seconds.
    /// Without `faststart` the moov atom is written at the END, after mdat
    /// (ffmpeg's default) — the case where a player must seek before playing.
    @discardableResult
    static func makeMP4(at url: URL, duration: Int = 10, size: String = "320x240", rate: Int = 25,
                        faststart: Bool = false, timeout: TimeInterval = 180) throws -> URL {
        let ffmpeg = try TestTools.requireTool("ffmpeg")
        var args = [
            "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
            "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=\(rate)",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
            "-t", String(duration),
        ]
        if videoEncoder == "libx264" {
            args += ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
        } else {
            args += ["-c:v", "mpeg4", "-q:v", "5"]
        }
        args += ["-c:a", "aac", "-shortest"]
        if faststart { args += ["-movflags", "+faststart"] }
        args.append(url.path)
        let result = try TestTools.run(ffmpeg, args, timeout: timeout)
        guard result.succeeded else {
            throw TestSupportError("ffmpeg failed (exit \(result.exitCode), timedOut \(result.timedOut)): \(result.stderr)")
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: url.path)
        return url
    }

    /// Top-level boxes of an MP4 file, in file order.
    static func topLevelAtoms(of url: URL) throws -> [MP4Atom] {
        let data = [UInt8](try Data(contentsOf: url))
        var atoms: [MP4Atom] = []
        var offset = 0
        func be(_ at: Int, _ n: Int) -> Int {
            var v = 0
            for i in 0..<n { v = v << 8 | Int(data[at + i]) }
            return v
        }
        while offset + 8 <= data.count {
            var size = be(offset, 4)
            let type = String(decoding: data[(offset + 4)..<(offset + 8)], as: UTF8.self)
            if size == 1 {
                guard offset + 16 <= data.count else { throw TestSupportError("truncated largesize box at \(offset)") }
                size = be(offset + 8, 8)
            } else if size == 0 {
                size = data.count - offset
            }
            guard size >= 8, offset + size <= data.count else {
                throw TestSupportError("bad box \(type) size \(size) at \(offset) (file \(data.count) bytes)")
            }
            atoms.append(MP4Atom(type: type, offset: offset, size: size))
            offset += size
        }
        return atoms
    }

    /// True when the file's moov box comes after its mdat box.
    static func isMoovAtEnd(_ url: URL) throws -> Bool {
        let atoms = try topLevelAtoms(of: url)
        guard let moov = atoms.first(where: { $0.type == "moov" }),
              let mdat = atoms.first(where: { $0.type == "mdat" }) else {
            throw TestSupportError("no moov/mdat in \(url.lastPathComponent): \(atoms.map(\.type))")
        }
        return moov.offset > mdat.offset
    }

    /// Runs `ffprobe -show_format -show_streams` on `url` (a URL or path).
    /// Throws when ffprobe fails or times out.
    static func ffprobe(url: String, timeout: TimeInterval = 60) throws -> FFProbeInfo {
        let ffprobe = try TestTools.requireTool("ffprobe")
        var args = ["-hide_banner", "-v", "error", "-print_format", "json", "-show_format", "-show_streams"]
        if url.contains("://") { args += ["-rw_timeout", "15000000"] }
        let result = try TestTools.run(ffprobe, args + [url], timeout: timeout)
        guard result.succeeded else {
            throw TestSupportError("ffprobe \(url) failed (exit \(result.exitCode), timedOut \(result.timedOut)): \(result.stderr)")
        }
        guard let root = try JSONSerialization.jsonObject(with: result.stdoutData) as? [String: Any] else {
            throw TestSupportError("ffprobe printed no JSON object: \(result.stdout)")
        }
        let format = root["format"] as? [String: Any]
        let streams = (root["streams"] as? [[String: Any]] ?? []).map {
            FFProbeInfo.Stream(index: $0["index"] as? Int ?? -1,
                               codecType: $0["codec_type"] as? String ?? "",
                               codecName: $0["codec_name"] as? String ?? "")
        }
        return FFProbeInfo(formatName: format?["format_name"] as? String,
                           duration: (format?["duration"] as? String).flatMap(Double.init),
                           streams: streams, json: result.stdout)
    }

    /// Demuxes the whole of `url` with `ffmpeg -i URL -c copy -f null -`
    /// (reads every packet, like a player would). Check `succeeded`/`stderr`.
    static func ffmpegCopyToNull(url: String, extraInputArgs: [String] = [],
                                 timeout: TimeInterval = 120) throws -> ProcessResult {
        let ffmpeg = try TestTools.requireTool("ffmpeg")
        var args = ["-nostdin", "-hide_banner", "-loglevel", "error"]
        if url.contains("://") { args += ["-rw_timeout", "15000000"] }
        args += extraInputArgs + ["-i", url, "-c", "copy", "-f", "null", "-"]
        return try TestTools.run(ffmpeg, args, timeout: timeout)
    }
}
