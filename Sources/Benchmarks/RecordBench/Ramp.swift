import SoundFile

// The signals played: a ramp that recordings are checked against frame by frame, and a 16-bit WAV.

let rate = 48000
let loopFrames = 48000

/// The ramp: channel c, frame n carries ((n mod L) + 7919 c) mod 2^20 as a 24-bit integer.
func rampValue(_ n: Int, _ c: Int) -> Int32 { Int32(((n % loopFrames) + 7919 * c) % (1 << 20)) }

func writeRamp(_ path: String, channels: Int) throws {
    let info = SoundFile.Info(sampleRate: rate, channelCount: channels, format: SoundFile.Format(.wav, .pcm24))
    let file = try SoundFile(path: path, mode: .write, format: info)
    var samples = [Int32](repeating: 0, count: loopFrames * channels)
    for n in 0..<loopFrames { for c in 0..<channels { samples[n * channels + c] = rampValue(n, c) << 8 } }
    _ = samples.withUnsafeBufferPointer { file.writeFrames($0) }
    try file.close()
}

/// Reads channel 0 of a float recording and counts dropped and repeated frames against the ramp.
func checkRamp(path: String, channel: Int) -> (frames: Int, dropped: Int, repeated: Int) {
    guard let file = try? SoundFile(path: path, mode: .read) else { return (0, 0, 0) }
    let channels = file.info.channelCount
    var samples = [Float](repeating: 0, count: Int(file.info.frameCount) * channels)
    let read = samples.withUnsafeMutableBufferPointer { file.readFrames(into: $0) }
    try? file.close()
    let values = (0..<read.count).map { Int((samples[$0 * channels + channel] * 8_388_608).rounded()) }
    // Skip leading silence (before the first ramp frame reached the port). A run of silence
    // in the middle is frames lost and filled in (jaq keeps time that way); a jump in the ramp
    // is frames lost and left out (the file is shorter); a step back is frames repeated.
    guard let start = values.firstIndex(where: { $0 != 0 }) else { return (read.count, 0, 0) }
    var dropped = 0, repeated = 0
    var last = values[start]
    var silent = 0
    for i in (start + 1)..<values.count {
        let value = values[i]
        if value == 0 && (last + silent + 1) % loopFrames != 0 {
            silent += 1
            continue
        }
        let expected = (last + silent + 1) % loopFrames
        if value != expected {
            let step = (value - expected + loopFrames) % loopFrames
            if step < loopFrames / 2 { dropped += step } else { repeated += loopFrames - step }
        }
        dropped += silent
        silent = 0
        last = value
    }
    return (read.count, dropped, repeated)
}

/// A `channels`-channel 16-bit WAV of `seconds` seconds (a ramp per channel).
func writeWAV16(_ path: String, channels: Int, seconds: Double) throws {
    let info = SoundFile.Info(sampleRate: rate, channelCount: channels, format: SoundFile.Format(.wav, .pcm16))
    let file = try SoundFile(path: path, mode: .write, format: info)
    var samples = [Int16](repeating: 0, count: 4800 * channels)
    for block in 0..<Int(seconds * 10) {
        for n in 0..<4800 { for c in 0..<channels { samples[n * channels + c] = Int16(truncatingIfNeeded: (block * 4800 + n) &* 7 &+ c * 511) } }
        _ = samples.withUnsafeBufferPointer { file.writeFrames($0) }
    }
    try file.close()
}
