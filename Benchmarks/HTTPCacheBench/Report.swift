import Foundation

/// One server's figures in one scenario, by metric name.
struct Row: Codable {
    var server: String
    var metrics: [String: Double]
    /// Checks of the responses: requests, bytes compared, errors, wrong bytes.
    var requests: UInt64 = 0
    var checkedBytes: UInt64 = 0
    var spotChecks: UInt64 = 0
    var errors: UInt64 = 0
    var mismatches: UInt64 = 0
    var firstError: String = ""
}

struct ScenarioResult: Codable {
    var id: Int
    var title: String
    /// Metric names shown, in column order.
    var columns: [String]
    var rows: [Row]
    /// The servers httpcache is compared with; ratios are httpcache / peer.
    var peers: [String]
    var ratios: [String: [String: Double]]
    var targets: [TargetCheck]
    var notes: [String]
}

struct MachineInfo: Codable {
    var cpu: String
    var cores: Int
    var memoryGiB: Double
    var kernel: String
    var os: String
    var nginx: String

    static func current(nginx: String?) -> MachineInfo {
        let cpuinfo = ProcessStats.readText("/proc/cpuinfo") ?? ""
        let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .map { String($0.split(separator: ":", maxSplits: 1).last ?? "").trimmingCharacters(in: .whitespaces) } ?? "unknown"
        let memKiB = (ProcessStats.readText("/proc/meminfo") ?? "").split(separator: "\n").first { $0.hasPrefix("MemTotal:") }
            .map { Double($0.filter { $0.isNumber }) ?? 0 } ?? 0
        let osRelease = ProcessStats.readText("/etc/os-release") ?? ""
        let os = osRelease.split(separator: "\n").first { $0.hasPrefix("PRETTY_NAME=") }
            .map { $0.dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) } ?? "Linux"
        var uts = utsname()
        uname(&uts)
        let release = withUnsafeBytes(of: uts.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return MachineInfo(cpu: model, cores: ProcessInfo.processInfo.activeProcessorCount,
                           memoryGiB: (memKiB / 1_048_576 * 10).rounded() / 10, kernel: release, os: os,
                           nginx: nginx ?? "not installed")
    }
}

struct BenchReport: Codable {
    var machine: MachineInfo
    var date: String
    var command: String
    var settings: [String: String]
    var scenarios: [ScenarioResult]
    var allTargetsMet: Bool
    /// Targets that passed, missed, or could not be measured in this run.
    var targetSummary: TargetSummary
    var wrongBytes: UInt64
}

// MARK: text table

enum TableFormatter {
    static func format(_ report: BenchReport) -> String {
        var out = "HTTPCache benchmark — \(report.machine.cpu), \(report.machine.cores) cores, "
        out += "\(report.machine.memoryGiB) GiB, \(report.machine.os), kernel \(report.machine.kernel), nginx \(report.machine.nginx)\n"
        out += report.settings.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") + "\n"
        out += "Ratios are httpcache / peer (higher is better for req/s and MB/s, lower for the rest).\n"
        for scenario in report.scenarios {
            out += "\n" + format(scenario)
        }
        out += "\nTargets: " + report.targetSummary.text
        out += report.wrongBytes == 0 ? "; every checked byte was right.\n" : "; WRONG BYTES: \(report.wrongBytes) responses.\n"
        return out
    }

    static func format(_ s: ScenarioResult) -> String {
        let nameWidth = 18
        let width = s.columns.map { max($0.count, 10) }
        func pad(_ text: String, _ n: Int, left: Bool = false) -> String {
            text.count >= n ? text : (left ? text + String(repeating: " ", count: n - text.count)
                                           : String(repeating: " ", count: n - text.count) + text)
        }
        var out = "\(s.id). \(s.title)\n"
        if !s.rows.isEmpty {
            out += pad("", nameWidth, left: true) + zip(s.columns, width).map { "  " + pad($0, $1) }.joined() + "  checks\n"
        }
        for row in s.rows {
            out += pad(row.server, nameWidth, left: true)
            for (column, w) in zip(s.columns, width) {
                out += "  " + pad(row.metrics[column].map(number) ?? "-", w)
            }
            out += "  " + checks(row) + "\n"
        }
        for peer in s.peers {
            guard let ratios = s.ratios[peer] else { continue }
            out += pad("÷ \(peer)", nameWidth, left: true)
            for (column, w) in zip(s.columns, width) {
                out += "  " + pad(ratios[column].map { String(format: "%.2f", $0) } ?? "-", w)
            }
            out += "\n"
        }
        for target in s.targets {
            let value = target.value.map { " (\(String(format: "%.3f", $0)))" } ?? ""
            let reason = target.reason.map { ": \($0)" } ?? ""
            out += "   \(pad(target.verdict + ":", 14, left: true))\(target.description)\(value)\(reason)\n"
        }
        for note in s.notes { out += "   note: \(note)\n" }
        return out
    }

    static func number(_ v: Double) -> String {
        if v == 0 { return "0" }
        if abs(v) >= 1000 { return String(format: "%.0f", v) }
        if abs(v) >= 100 { return String(format: "%.1f", v) }
        if abs(v) >= 1 { return String(format: "%.2f", v) }
        return String(format: "%.3f", v)
    }

    private static func checks(_ row: Row) -> String {
        if row.requests == 0 && row.errors == 0 { return "-" }  // a reading of memory, no requests
        var parts = ["\(row.requests) req"]
        if row.mismatches > 0 { parts.append("\(row.mismatches) WRONG") }
        if row.errors > 0 { parts.append("\(row.errors) errors: \(row.firstError)") }
        if row.mismatches == 0 && row.errors == 0 { parts.append("ok") }
        return parts.joined(separator: ", ")
    }
}
