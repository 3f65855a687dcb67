import AudioCodec
import AudioToolbox
import Foundation
import QueueCore
import Testing

/// Decoders played through an output queue: files made by ffmpeg's command line, their packets
/// as libavformat lists them, played on a ManualDriver, equal ffmpeg's own decode of the file.
extension AudioQueueCodecTests {
    /// MP3 (libmp3lame, VBR packets with descriptions) and IMA4 (CBR, in CAF): what the queue
    /// plays equals ffmpeg's decode from the frame ffmpeg's decode starts at (ffmpeg drops the
    /// MP3 encoder delay its gapless header names; the queue plays every decoded frame), to
    /// float rounding.
    @Test(arguments: [
        (["-c:a", "libmp3lame", "-b:a", "192k"], "mp3", kAudioFormatMPEGLayer3, UInt32(1152), UInt32(0)),
        (["-c:a", "adpcm_ima_qt"], "caf", kAudioFormatAppleIMA4, UInt32(64), UInt32(68)),
    ])
    func playsFFmpegsFileAsFFmpegDecodesIt(codec: [String], fileExtension: String, formatID: AudioFormatID,
                                           framesPerPacket: UInt32, bytesPerPacket: UInt32) throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/take." + fileExtension
        try Self.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
                      "aevalsrc=0.3*sin(2*PI*440*t)+0.1*sin(2*PI*(100+2000*t)*t)|0.3*sin(2*PI*660*t):s=48000:d=2"]
                     + codec + [path])
        try Self.run(["ffmpeg", "-v", "error", "-y", "-i", path, "-f", "f32le", "-c:a", "pcm_f32le", dir + "/ref.raw"])
        let reference = try Self.floats(dir + "/ref.raw")
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let index = try MediaFileReader.index(path: path, fileByteCount: Int64(bytes.count))
        var packets: [[UInt8]] = []
        for p in index.packets {
            let data = Array(bytes[Int(p.position)..<Int(p.position) + p.byteCount])
            // CAF's demuxer reads CBR packets in blocks: one IMA4 packet a description.
            let size = bytesPerPacket > 0 ? Int(bytesPerPacket) : data.count
            packets += stride(from: 0, to: data.count, by: size).map { Array(data[$0..<min(data.count, $0 + size)]) }
        }
        #expect(packets.count > 20)
        let format = AudioStreamBasicDescription(
            mSampleRate: 48000, mFormatID: formatID, mFormatFlags: 0, mBytesPerPacket: bytesPerPacket,
            mFramesPerPacket: framesPerPacket, mBytesPerFrame: 0, mChannelsPerFrame: 2, mBitsPerChannel: 0, mReserved: 0)
        let (played, player) = try Self.play(packets, format: format, cookie: [], driver: ManualDriver(periodFrames: 256))
        #expect(player.statuses.withLock { $0 }.isEmpty)
        #expect(player.converterErrors.withLock { $0 }.isEmpty)
        let frames = reference.count / 2
        let decoded = packets.count * Int(framesPerPacket)
        #expect(decoded >= frames && decoded - frames < 4000, "\(decoded) frames decoded, ffmpeg's \(frames)")
        // Where ffmpeg's first frame is in what the queue played (the MP3 delay ffmpeg skips).
        let skip = (0..<4000).first { k in
            (0..<512).allSatisfy { i in k + 1000 + i < played[0].count && abs(played[0][k + 1000 + i] - reference[(1000 + i) * 2]) <= 1e-6 }
        }
        let offset = try #require(skip, "ffmpeg's decode is not in what the queue played")
        print("\(fileExtension): ffmpeg's decode starts \(offset) frames into the queue's")
        if formatID == kAudioFormatAppleIMA4 { #expect(offset == 0) }
        for c in 0..<2 {
            let count = min(frames, played[c].count - offset)
            #expect(count >= frames - Int(framesPerPacket), "channel \(c): \(count) of \(frames) frames")
            let bad = (0..<count).first { abs(played[c][offset + $0] - reference[$0 * 2 + c]) > 1e-6 }
            #expect(bad == nil, "channel \(c): frame \(bad ?? -1) differs from ffmpeg's decode")
        }
    }
}
