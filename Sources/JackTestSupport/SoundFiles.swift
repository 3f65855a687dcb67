import SoundFile

/// Every frame of the sound file at `path`, interleaved, with its channel count.
public func readInterleaved<Sample: SoundFileSample & Numeric>(_ path: String, as type: Sample.Type = Sample.self) throws
    -> (channels: Int, samples: [Sample]) {
    let file = try SoundFile(path: path, mode: .read)
    let channels = file.info.channelCount
    var samples = [Sample](repeating: 0, count: Int(file.info.frameCount) * channels)
    let transfer = samples.withUnsafeMutableBufferPointer { file.readFrames(into: $0) }
    try file.close()
    return (channels, Array(samples[0..<(transfer.count * channels)]))
}

/// Every frame of the sound file at `path` as one array of samples per channel.
public func readPlanes(_ path: String) throws -> [[Float]] {
    let (channels, samples) = try readInterleaved(path, as: Float.self)
    return (0..<channels).map { c in stride(from: c, to: samples.count, by: channels).map { samples[$0] } }
}
