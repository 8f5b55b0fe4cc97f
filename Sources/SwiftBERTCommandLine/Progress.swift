import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SwiftBERT

/// How far a stream has got: records done, and bytes of the input when its size is known.
package struct StreamProgress: Sendable {
    package let records: Int
    package let bytesRead: Int
    package let totalBytes: Int?
    package let seconds: Double

    package init(records: Int, bytesRead: Int, totalBytes: Int?, seconds: Double) {
        (self.records, self.bytesRead, self.totalBytes, self.seconds) = (records, bytesRead, totalBytes, seconds)
    }

    package var recordsPerSecond: Double { seconds > 0 ? Double(records) / seconds : 0 }
    /// Share of the input read, 0...1, when its size is known.
    package var fraction: Double? {
        guard let totalBytes, totalBytes > 0 else { return nil }
        return min(1, Double(bytesRead) / Double(totalBytes))
    }
    /// Seconds left at the pace so far, from the share of bytes read.
    package var secondsLeft: Double? {
        guard let fraction, fraction > 0.001, seconds > 0.5 else { return nil }
        return seconds * (1 - fraction) / fraction
    }
}

/// A one-line progress bar on standard error: records, records/s, percentage and ETA, redrawn
/// at most ten times a second and erased by `finish()`. Draws nothing unless stderr is a terminal.
package final class ProgressBar {
    private let enabled: Bool
    private let unit: String
    private var lastDraw = 0.0
    private var drawn = false

    /// `unit` names the records ("lines"). `enabled: nil` means "when stderr is a terminal".
    package init(unit: String = "lines", enabled: Bool? = nil) {
        self.unit = unit
        self.enabled = enabled ?? isTerminal(STDERR_FILENO)
    }

    package func update(_ progress: StreamProgress) {
        guard enabled, progress.seconds - lastDraw >= 0.1 || !drawn else { return }
        lastDraw = progress.seconds
        drawn = true
        writeStandardError("\r\u{1B}[K" + ProgressBar.render(progress, unit: unit, width: terminalWidth()))
    }

    /// Erases the bar so the next message starts on a clean line.
    package func finish() {
        guard enabled, drawn else { return }
        writeStandardError("\r\u{1B}[K")
        drawn = false
    }

    /// The bar's text, e.g. "[#####-----]  48%  4800 lines  612 lines/s  ETA 0:08".
    package static func render(_ p: StreamProgress, unit: String, width: Int = 80) -> String {
        var text = "\(p.records) \(unit)  \(Int(p.recordsPerSecond.rounded())) \(unit)/s"
        guard let fraction = p.fraction else { return text }
        let percent = String(Int((fraction * 100).rounded(.down))).leftPadded(to: 3) + "%"
        text = "\(percent)  \(text)  ETA \(p.secondsLeft.map(clock) ?? "--:--")"
        let barWidth = min(30, width - text.count - 4)
        guard barWidth >= 5 else { return text }
        let filled = Int((fraction * Double(barWidth)).rounded(.down))
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled) + "] " + text
    }
}

/// "1:05", "1:02:03".
func clock(_ seconds: Double) -> String {
    let s = Int(seconds.rounded())
    let two = { (n: Int) in n < 10 ? "0\(n)" : "\(n)" }
    return s >= 3600 ? "\(s / 3600):\(two(s / 60 % 60)):\(two(s % 60))" : "\(s / 60):\(two(s % 60))"
}

private func terminalWidth() -> Int {
    var size = winsize()
    guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
    return Int(size.ws_col)
}

