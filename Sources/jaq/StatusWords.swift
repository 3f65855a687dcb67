import AudioToolbox

/// A result code in words, for messages: "no such file (-43)", as `jaq info` and Apple's
/// examples print it, or "error 'xyz?'" for a code without words. `file`: the code came from
/// opening or reading an audio file.
func describe(_ status: OSStatus, file: Bool) -> String {
    let code = fourCharacterCode(status)
    return statusMessage(status, readingFile: file).map { "\($0) (\(code))" } ?? "error \(code)"
}
