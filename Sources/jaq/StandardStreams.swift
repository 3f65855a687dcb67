import Glibc

/// Standard output and error written straight to their descriptors (write(2), past stdio's
/// buffer), as Foundation's `FileHandle.standardOutput.write` wrote them: a display redraw or a
/// message reaches the terminal at once.
enum StandardStreams {
    static func output(_ text: String) { write(text, to: STDOUT_FILENO) }

    static func error(_ text: String) { write(text, to: STDERR_FILENO) }

    /// All of `text`, across short writes and signals; a closed stream loses the rest.
    private static func write(_ text: String, to descriptor: Int32) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }
}
