// httpcache-micro: timing loops over the pure hot paths of a request —
// parsing its head and Range, planning it against the cache, updating the
// range set as bytes land, building the response head — and the throughput
// of decrypting cached ciphertext (AES-128 CTR/ECB) on the way out, and of
// reading cached data through the in-process reader (ReaderBench.swift),
// and of data files encrypted at rest (AtRestBench.swift).
//
//   httpcache-micro [--quick] [--json FILE]
//
// Each benchmark repeats its body for a fixed time and prints ns per call.
import CacheHTTP
import CacheIO
import CacheLoading
import CacheStorage
import Foundation

/// Keeps results alive so the optimizer cannot drop the work.
nonisolated(unsafe) var sink = 0

func nowNanoseconds(_ clock: clockid_t = CLOCK_MONOTONIC) -> UInt64 {
    var ts = timespec()
    clock_gettime(clock, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

struct MicroResult {
    var name: String
    var nanosecondsPerCall: Double
    var calls: Int
    /// This thread's CPU time per call: on a shared machine, wall time
    /// includes waiting for a core, CPU time does not.
    var cpuNanosecondsPerCall: Double
    /// Bytes one call processes, for throughput benchmarks (GB/s).
    var bytesPerCall: Int? = nil

    var gigabytesPerSecond: Double? {
        bytesPerCall.map { Double($0) / nanosecondsPerCall }  // bytes per ns = GB/s
    }
    /// Throughput per second of CPU time (what `openssl speed` reports by default).
    var gigabytesPerCPUSecond: Double? {
        bytesPerCall.map { Double($0) / cpuNanosecondsPerCall }
    }
}

/// Runs `body` (which does `batch` calls) until `seconds` have passed.
func measure(_ name: String, seconds: Double, batch: Int = 100, bytesPerCall: Int? = nil,
             _ body: () -> Void) -> MicroResult {
    body()  // warm caches and lazy state
    let budget = UInt64(seconds * 1e9)
    let start = nowNanoseconds()
    let cpuStart = nowNanoseconds(CLOCK_THREAD_CPUTIME_ID)
    var calls = 0
    var elapsed: UInt64 = 0
    repeat {
        body()
        calls += batch
        elapsed = nowNanoseconds() - start
    } while elapsed < budget
    let cpu = nowNanoseconds(CLOCK_THREAD_CPUTIME_ID) - cpuStart
    return MicroResult(name: name, nanosecondsPerCall: Double(elapsed) / Double(calls), calls: calls,
                       cpuNanosecondsPerCall: Double(cpu) / Double(calls), bytesPerCall: bytesPerCall)
}

// MARK: inputs

let requestBytes = Array("""
    GET /p/aHR0cHM6Ly9jZG4uZXhhbXBsZS5jb20vdmlkZW9zLzIwMjQvbW92aWUtMTA4MHAubXA0P3Rva2VuPWFiYzEyMw/movie-1080p.mp4 HTTP/1.1\r
    Host: 127.0.0.1:8080\r
    User-Agent: Lavf/60.3.100\r
    Accept: */*\r
    Range: bytes=1048576-\r
    Connection: keep-alive\r
    Icy-MetaData: 1\r
    \r

    """.utf8)

let origin = "https://cdn.example.com/videos/2024/movie-1080p.mp4?token=abc123"
let proxyTarget = ProxyURL.path(forOrigin: origin)!

/// A resource with 32 cached runs of 1 MiB separated by 1 MiB holes.
let fragmented: RangeSet = {
    var set = RangeSet()
    for i in 0..<32 { set.insert(Int64(i) * (2 << 20)..<(Int64(i) * (2 << 20) + (1 << 20))) }
    return set
}()
let inFlight = [InFlight(id: 1, pending: (5 << 20)..<(6 << 20)), InFlight(id: 2, pending: (40 << 20)..<(41 << 20))]

var responseHeaders: HTTPHeaders {
    var headers = HTTPHeaders()
    headers.add("Server", "HTTPCache")
    headers.add("Date", "Sat, 21 Nov 2026 06:00:00 GMT")
    headers.add("Content-Type", "video/mp4")
    headers.add("Accept-Ranges", "bytes")
    headers.add("ETag", "\"6650a1b2-6400000\"")
    headers.add("Last-Modified", "Fri, 24 May 2024 14:00:18 GMT")
    headers.add("Content-Range", "bytes 1048576-104857599/104857600")
    headers.add("Content-Length", "103809024")
    headers.add("Connection", "keep-alive")
    return headers
}

/// Decrypts a 64 MiB buffer in 1 MiB chunks at their offsets (one call is
/// the whole buffer), as a reader would hand cached ciphertext to the client.
func measureDecryption(_ name: String, kind: CipherKind, seconds: Double) -> MicroResult {
    let total = 64 << 20
    let chunk = 1 << 20
    let input = UnsafeMutableRawBufferPointer.allocate(byteCount: total, alignment: 64)
    let output = UnsafeMutableRawBufferPointer.allocate(byteCount: total, alignment: 64)
    defer { input.deallocate(); output.deallocate() }
    // AES runs in constant time, so the bytes do not matter; writing both
    // buffers faults their pages in before timing.
    input.initializeMemory(as: UInt8.self, repeating: 0x5a)
    output.initializeMemory(as: UInt8.self, repeating: 0)
    let spec = DecryptionSpec(kind: kind, key: Array(0..<16), iv: Array(repeating: 0xa5, count: 16))
    let decryptor: BlockDecryptor
    do { decryptor = try BlockDecryptor(spec) } catch { fatalError("\(name): \(error)") }
    return measure(name, seconds: seconds, batch: 1, bytesPerCall: total) {
        for offset in stride(from: 0, to: total, by: chunk) {
            do {
                try decryptor.decrypt(UnsafeRawBufferPointer(rebasing: input[offset..<offset + chunk]),
                                      atOffset: Int64(offset),
                                      into: UnsafeMutableRawBufferPointer(rebasing: output[offset..<offset + chunk]))
            } catch {
                fatalError("\(name): \(error)")
            }
        }
        sink &+= Int(output[total - 1])
    }
}

// MARK: main

let arguments = CommandLine.arguments.dropFirst()
let quick = arguments.contains("--quick")
let jsonPath = arguments.firstIndex(of: "--json").flatMap { arguments.index(after: $0) < arguments.endIndex ? arguments[arguments.index(after: $0)] : nil }
let seconds = quick ? 0.02 : 0.5

var results: [MicroResult] = []

results.append(measure("request head parse (player GET, 7 fields)", seconds: seconds) {
    requestBytes.withUnsafeBytes { raw in
        for _ in 0..<100 {
            if case .success(let parsed?) = RequestHeadParser.parse(raw) { sink &+= parsed.consumed }
        }
    }
})

results.append(measure("proxy URL decode (target → origin URL)", seconds: seconds) {
    for _ in 0..<100 { sink &+= ProxyURL.originURL(fromTarget: proxyTarget)?.port ?? 0 }
})

// Every proxied request asks whether it carries CMCD (issue 38): one that does not must cost next to nothing.
let playerHead: HTTPRequestHead = {
    guard case .success(let parsed?) = requestBytes.withUnsafeBytes({ RequestHeadParser.parse($0) }) else {
        fatalError("the sample head does not parse")
    }
    return parsed.head
}()
results.append(measure("CMCD presence check (a request without any)", seconds: seconds) {
    for _ in 0..<100 where CMCD.mayBePresent(target: playerHead.target, headers: playerHead.headers) { sink &+= 1 }
})

results.append(measure("Range parse + resolve (bytes=a-b)", seconds: seconds) {
    for i in 0..<100 {
        let specs = RangeHeaderParser.parse(i & 1 == 0 ? "bytes=1048576-2097151" : "bytes=0-")
        sink &+= specs?.first?.resolve(length: 104_857_600)?.count ?? 0
    }
})

results.append(measure("plan a cached range (1 run)", seconds: seconds) {
    for i in 0..<100 {
        let start = Int64(i & 15) * (2 << 20)
        sink &+= SlicePlanner.plan(start..<(start + (64 << 10)), available: fragmented, inFlight: []).count
    }
})

results.append(measure("plan 0-end over 32 runs + 2 downloads", seconds: seconds, batch: 10) {
    for _ in 0..<10 {
        sink &+= SlicePlanner.plan(0..<(100 << 20), available: fragmented, inFlight: inFlight).count
    }
})

results.append(measure("range set: append 64 KiB as it lands", seconds: seconds, batch: 1600) {
    var set = RangeSet()
    for i in 0..<1600 { set.insert(Int64(i) << 16..<(Int64(i + 1) << 16)) }
    sink &+= set.ranges.count
})

results.append(measure("range set: insert into 32 runs", seconds: seconds) {
    var set = fragmented
    for i in 0..<100 {
        let start = Int64((i * 7919) % 64) << 20
        set.insert(start..<(start + (256 << 10)))
    }
    sink &+= set.ranges.count
})

results.append(measure("range set: run(containing:) lookup", seconds: seconds) {
    for i in 0..<100 { sink &+= fragmented.run(containing: Int64(i) << 20)?.count ?? 0 }
})

results.append(measure("response head via HTTPHeaders (206)", seconds: seconds) {
    for _ in 0..<100 {
        let head = HTTPResponseHead(version: .http11, status: 206, reason: nil, headers: responseHeaders)
        sink &+= head.serialized().count
    }
})

results.append(measure("response head via HeadBuilder (206)", seconds: seconds) {
    for _ in 0..<100 {
        var head = HeadBuilder(status: 206)
        head.add("Server", "HTTPCache")
        head.add("Date", "Sat, 21 Nov 2026 06:00:00 GMT")
        head.add("Content-Type", "video/mp4")
        head.add("Accept-Ranges", "bytes")
        head.add("ETag", "\"6650a1b2-6400000\"")
        head.add("Last-Modified", "Fri, 24 May 2024 14:00:18 GMT")
        head.addContentRange(1_048_576..<104_857_600, total: 104_857_600)
        head.add("Content-Length", decimal: 103_809_024)
        head.add("Connection", "keep-alive")
        sink &+= head.finish().count
    }
})

results.append(measureDecryption("decrypt AES-128-CTR, 64 MiB in 1 MiB chunks", kind: .aes128CTR, seconds: seconds))
results.append(measureDecryption("decrypt AES-128-ECB, 64 MiB in 1 MiB chunks", kind: .aes128ECB, seconds: seconds))
results.append(measureTransform("decrypt transform CTR, 64 KiB+5 pieces", kind: .aes128CTR, seconds: seconds))
results += readerBenchmarks(seconds: seconds, quick: quick)
results += atRestBenchmarks(seconds: seconds, quick: quick)

print("httpcache-micro — \(quick ? "quick run (numbers are rough)" : "0.5 s per benchmark")")
for result in results {
    let name = result.name.padding(toLength: 44, withPad: " ", startingAt: 0)
    let ns = String(format: "%10.1f", result.nanosecondsPerCall)
    let rate = String(format: "%12.0f", 1e9 / result.nanosecondsPerCall)
    if let gbps = result.gigabytesPerSecond, let cpuGbps = result.gigabytesPerCPUSecond {
        print("\(name) \(ns) ns/call \(rate) calls/s \(String(format: "%6.2f", gbps)) GB/s"
              + " (\(String(format: "%.2f", cpuGbps)) GB per CPU second)")
    } else {
        print("\(name) \(ns) ns/call \(rate) calls/s")
    }
}
if sink == 42 { print("") }  // uses the sink

if let jsonPath {
    let items = results.map { r in
        var rate = ""
        if let gbps = r.gigabytesPerSecond, let cpuGbps = r.gigabytesPerCPUSecond {
            rate = ", \"gb_per_s\": \(String(format: "%.3f", gbps)), \"gb_per_cpu_s\": \(String(format: "%.3f", cpuGbps))"
        }
        return "  {\"name\": \"\(r.name)\", \"ns_per_call\": \(String(format: "%.2f", r.nanosecondsPerCall)), \"calls\": \(r.calls)\(rate)}"
    }
    let text = "[\n" + items.joined(separator: ",\n") + "\n]\n"
    do {
        try Data(text.utf8).write(to: URL(fileURLWithPath: jsonPath))
    } catch {
        FileHandle.standardError.write(Data("httpcache-micro: cannot write \(jsonPath): \(error)\n".utf8))
        exit(1)
    }
}
