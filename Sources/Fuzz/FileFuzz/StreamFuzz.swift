import AudioToolbox
import Foundation
import Glibc

/// Hostile streams for AudioFileStream: mutants of the seed files (and of the corpora), fed
/// in random splits (one byte to a few KiB), with random discontinuities and seeks, every
/// property asked for from inside the listener. A crash or hang saves the mutant (as the file
/// fuzzer does); a result that is not one of Apple's AudioFileStream codes, or packets
/// described outside the bytes handed over, saves it as odd-S-i.bin and fails the run.
///
///   FileFuzz stream --seed S --iterations N [--start I] [--corpus DIR]... --crashes DIR
enum StreamFuzz {
    /// The codes a stream call may return.
    static let allowed: Set<OSStatus> = [
        noErr, kAudio_ParamError, kAudioFileStreamError_UnsupportedFileType, kAudioFileStreamError_UnsupportedDataFormat,
        kAudioFileStreamError_UnsupportedProperty, kAudioFileStreamError_BadPropertySize, kAudioFileStreamError_NotOptimized,
        kAudioFileStreamError_InvalidPacketOffset, kAudioFileStreamError_InvalidFile, kAudioFileStreamError_ValueUnknown,
        kAudioFileStreamError_DataUnavailable, kAudioFileStreamError_IllegalOperation,
    ]

    static let properties: [AudioFileStreamPropertyID] = [
        kAudioFileStreamProperty_ReadyToProducePackets, kAudioFileStreamProperty_FileFormat, kAudioFileStreamProperty_DataFormat,
        kAudioFileStreamProperty_FormatList, kAudioFileStreamProperty_MagicCookieData, kAudioFileStreamProperty_AudioDataByteCount,
        kAudioFileStreamProperty_AudioDataPacketCount, kAudioFileStreamProperty_MaximumPacketSize, kAudioFileStreamProperty_DataOffset,
        kAudioFileStreamProperty_ChannelLayout, kAudioFileStreamProperty_PacketToFrame, kAudioFileStreamProperty_FrameToPacket,
        kAudioFileStreamProperty_PacketToByte, kAudioFileStreamProperty_ByteToPacket, kAudioFileStreamProperty_PacketTableInfo,
        kAudioFileStreamProperty_PacketSizeUpperBound, kAudioFileStreamProperty_AverageBytesPerPacket, kAudioFileStreamProperty_BitRate,
    ]

    /// What one mutant's parse saw.
    final class Walk {
        var violations: [String] = []
        var packets = 0
        var checksum: UInt64 = 0
        var random: SplitMix64
        init(random: SplitMix64) { self.random = random }

        func check(_ status: OSStatus, _ what: String) {
            if !StreamFuzz.allowed.contains(status) { violations.append("\(what)=\(fourCharacterCode(status))") }
        }
    }

    static func run(seed: UInt64, from start: Int, count: Int, crashDirectory: String, corpora: [String]) throws -> Bool {
        let fuzzer = try Fuzzer(seed: seed, crashDirectory: crashDirectory, corpora: corpora)
        let inputs = fuzzer.inputs + StreamSeeds.streamable(fuzzer.inputs)
        let pending = "\(crashDirectory)/.pending"
        FuzzSignals.install(pending: pending)
        var outcomes: [String: Int] = [:]
        var oddities = 0
        let began = Date()
        for index in start..<start + count {
            var random = SplitMix64(seed: seed ^ (UInt64(index) &* 0xD1B5_4A32_D192_ED03))
            let input = inputs[Int(random.next() % UInt64(inputs.count))]
            let mutant = random.next() % 8 == 0 ? input.bytes : Mutator.mutate(input.bytes, &random)
            _ = FileManager.default.createFile(atPath: pending, contents: Data(mutant))
            FuzzSignals.arm(crash: "\(crashDirectory)/crash-stream-\(seed)-\(index).bin", hang: "\(crashDirectory)/hang-stream-\(seed)-\(index).bin",
                            message: "FileFuzz stream: mutant \(index) of seed \(seed) (from \(input.name))")
            let walk = Walk(random: random)
            let status = parse(mutant, walk)
            alarm(0)
            if !walk.violations.isEmpty {
                let saved = "\(crashDirectory)/odd-stream-\(seed)-\(index).bin"
                rename(pending, saved)
                print("FileFuzz stream: mutant \(index) of seed \(seed) (from \(input.name)): \(walk.violations.prefix(5).joined(separator: ", ")); input saved as \(saved)")
                oddities += 1
            }
            outcomes["parse=\(fourCharacterCode(status, quoted: false))", default: 0] += 1
        }
        unlink(pending)
        let summary = outcomes.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: " ")
        print("streams=\(count) seed=\(seed) inputs=\(inputs.count) seconds=\(String(format: "%.1f", Date().timeIntervalSince(began))) odd=\(oddities) \(summary)")
        return oddities == 0
    }

    /// Parses `bytes` in random pieces; returns the last status of ParseBytes.
    static func parse(_ bytes: [UInt8], _ walk: Walk) -> OSStatus {
        var stream: AudioFileStreamID?
        let hints: [AudioFileTypeID] = [0, 0, kAudioFileMP3Type, kAudioFileAAC_ADTSType, kAudioFileCAFType]
        let hint = hints[Int(walk.random.next() % UInt64(hints.count))]
        walk.check(AudioFileStreamOpen(Unmanaged.passUnretained(walk).toOpaque(), listener, packetsProc, hint, &stream), "open")
        guard let stream else { return kAudio_ParamError }
        defer { walk.check(AudioFileStreamClose(stream), "close") }
        var offset = 0
        var status = noErr
        var calls = 0
        while offset < bytes.count, calls < 100_000 {
            calls += 1
            let roll = walk.random.next()
            let n = min(bytes.count - offset, roll % 4 == 0 ? 1 : Int((roll >> 8) % 4096) + 1)
            let flags: AudioFileStreamParseFlags = roll % 16 == 1 ? .discontinuity : []
            status = bytes[offset..<offset + n].withUnsafeBytes { AudioFileStreamParseBytes(stream, UInt32(n), $0.baseAddress, flags) }
            walk.check(status, "parse")
            if status != noErr { break }
            offset += n
            if roll % 32 == 3 {
                // Seek to a random packet and go on from where it says (or from anywhere).
                var byteOffset: Int64 = 0
                var seekFlags: AudioFileStreamSeekFlags = []
                let packet = Int64(walk.random.next() % 4096) - 8
                let sought = AudioFileStreamSeek(stream, packet, &byteOffset, &seekFlags)
                walk.check(sought, "seek")
                var dataOffset: Int64 = 0
                var size = UInt32(8)
                if sought == noErr, AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_DataOffset, &size, &dataOffset) == noErr,
                   dataOffset >= 0, byteOffset >= 0, dataOffset + byteOffset <= Int64(bytes.count) {
                    offset = Int(dataOffset + byteOffset)
                } else {
                    offset = Int(walk.random.next() % UInt64(bytes.count))
                }
                let resumed = bytes[offset...].prefix(64).withUnsafeBytes {
                    AudioFileStreamParseBytes(stream, UInt32($0.count), $0.baseAddress, .discontinuity)
                }
                walk.check(resumed, "parse after seek")
                if resumed != noErr { break }
                offset = min(offset + 64, bytes.count)
            }
        }
        askEverything(stream, walk)
        return status
    }

    /// Every property, through GetPropertyInfo and GetProperty with the size it gives, one
    /// byte less, and translations of hostile numbers.
    static func askEverything(_ stream: AudioFileStreamID, _ walk: Walk) {
        for id in properties {
            var size: UInt32 = 0
            var writable = false
            let info = AudioFileStreamGetPropertyInfo(stream, id, &size, &writable)
            walk.check(info, "info")
            guard info == noErr, size <= 1 << 24 else { continue }
            let capacity = max(Int(size), 64)
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
            defer { buffer.deallocate() }
            for attempt in [size, size &- 1, 0] {
                memset(buffer, 0, capacity)
                if id == kAudioFileStreamProperty_PacketToByte || id == kAudioFileStreamProperty_PacketToFrame
                    || id == kAudioFileStreamProperty_ByteToPacket || id == kAudioFileStreamProperty_FrameToPacket {
                    let hostile: [Int64] = [0, 1, -1, Int64.max, Int64.min, 1 << 40]
                    buffer.storeBytes(of: hostile[Int(walk.random.next() % 6)], as: Int64.self)
                    buffer.storeBytes(of: hostile[Int(walk.random.next() % 6)], toByteOffset: 8, as: Int64.self)
                }
                var ioSize = min(attempt, UInt32(capacity))
                walk.check(AudioFileStreamGetProperty(stream, id, &ioSize, buffer), "get")
                if ioSize > UInt32(capacity) { walk.violations.append("size \(ioSize) > \(capacity)") }
            }
        }
    }

    static let listener: AudioFileStream_PropertyListenerProc = { client, stream, id, _ in
        let walk = Unmanaged<Walk>.fromOpaque(client!).takeUnretainedValue()
        if walk.random.next() % 4 == 0 { askEverything(stream, walk) }
        var format = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        if id == kAudioFileStreamProperty_ReadyToProducePackets {
            walk.check(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_DataFormat, &size, &format), "format at ready")
        }
    }

    static let packetsProc: AudioFileStream_PacketsProc = { client, byteCount, packetCount, data, descriptions in
        let walk = Unmanaged<Walk>.fromOpaque(client!).takeUnretainedValue()
        walk.packets += Int(packetCount)
        let bytes = UnsafeRawBufferPointer(start: data, count: Int(byteCount))
        // Touch every byte handed over (AddressSanitizer checks the range under make asan).
        for byte in bytes { walk.checksum = walk.checksum &* 31 &+ UInt64(byte) }
        guard let descriptions else { return }
        for i in 0..<Int(packetCount) {
            let d = descriptions[i]
            if d.mStartOffset < 0 || d.mStartOffset + Int64(d.mDataByteSize) > Int64(byteCount) || d.mDataByteSize == 0 {
                walk.violations.append("packet \(i) at \(d.mStartOffset)+\(d.mDataByteSize) of \(byteCount) bytes")
            }
        }
    }
}

/// Seeds that stream: jaq writes CAF's packet table and MPEG-4's movie header after the
/// audio data (as ffmpeg does), which AudioFileStream refuses at once ('optm'); these
/// copies have them before it, as afconvert and `-movflags +faststart` write them.
enum StreamSeeds {
    static func streamable(_ inputs: [(name: String, bytes: [UInt8])]) -> [(name: String, bytes: [UInt8])] {
        inputs.compactMap { input in
            if input.name.hasSuffix(".caf"), let moved = cafTableFirst(input.bytes) { return ("streamable-" + input.name, moved) }
            if input.name.hasSuffix(".m4a"), let moved = movieFirst(input.bytes) { return ("streamable-" + input.name, moved) }
            return nil
        }
    }

    static func be(_ bytes: [UInt8], _ at: Int, _ n: Int) -> Int {
        bytes[at..<at + n].reduce(0) { $0 << 8 | Int($1) }
    }

    /// A CAF file with 'data' moved after its other chunks; nil when it has no 'pakt' after 'data'.
    static func cafTableFirst(_ file: [UInt8]) -> [UInt8]? {
        var chunks: [[UInt8]] = []
        var data: [UInt8]?
        var i = 8
        while i + 12 <= file.count {
            let size = be(file, i + 4, 8)
            guard size >= 0, size <= file.count - i - 12 else { return nil }
            let chunk = Array(file[i..<i + 12 + size])
            if chunk.starts(with: Array("data".utf8)) { data = chunk } else { chunks.append(chunk) }
            i += 12 + size
        }
        guard let data, chunks.contains(where: { $0.starts(with: Array("pakt".utf8)) }) else { return nil }
        return Array(file[0..<8]) + chunks.joined() + data
    }

    /// An MPEG-4 file with 'moov' moved before 'mdat', its chunk offsets moved with the data.
    static func movieFirst(_ file: [UInt8]) -> [UInt8]? {
        var boxes: [(type: String, bytes: [UInt8])] = []
        var i = 0
        while i + 8 <= file.count {
            let size = be(file, i, 4)
            guard size >= 8, size <= file.count - i else { return nil }
            boxes.append((String(decoding: file[i + 4..<i + 8], as: UTF8.self), Array(file[i..<i + size])))
            i += size
        }
        guard let movie = boxes.firstIndex(where: { $0.type == "moov" }), let media = boxes.firstIndex(where: { $0.type == "mdat" }),
              media < movie else { return nil }
        var moov = boxes[movie].bytes
        shiftChunkOffsets(&moov, 8..<moov.count, by: moov.count)
        boxes.remove(at: movie)
        boxes.insert(("moov", moov), at: media)
        return boxes.flatMap(\.bytes)
    }

    /// Adds `shift` to every 'stco' entry inside the boxes of `range`.
    static func shiftChunkOffsets(_ bytes: inout [UInt8], _ range: Range<Int>, by shift: Int) {
        var i = range.lowerBound
        while i + 8 <= range.upperBound {
            let size = be(bytes, i, 4)
            guard size >= 8, size <= range.upperBound - i else { return }
            let type = String(decoding: bytes[i + 4..<i + 8], as: UTF8.self)
            if ["trak", "mdia", "minf", "stbl"].contains(type) { shiftChunkOffsets(&bytes, i + 8..<i + size, by: shift) }
            if type == "stco", size >= 16 {
                let count = be(bytes, i + 12, 4)
                for entry in 0..<count where i + 16 + 4 * entry + 4 <= i + size {
                    let at = i + 16 + 4 * entry
                    let value = UInt32(truncatingIfNeeded: be(bytes, at, 4) + shift)
                    for k in 0..<4 { bytes[at + k] = UInt8(truncatingIfNeeded: value >> (24 - 8 * k)) }
                }
            }
            i += size
        }
    }
}
