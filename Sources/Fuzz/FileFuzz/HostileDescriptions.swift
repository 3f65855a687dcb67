import AudioToolbox
import Foundation
import QueueCore
import Synchronization

/// Hostile packet descriptions enqueued on compressed output queues (AAC from an .m4a, MP3 from
/// an .mp3, both written here and read back with AudioFileReadPacketData) that play on a
/// ManualDriver: no server, the same engine as on JACK. Each buffer carries real packets and
/// one mutation of its descriptions or data; the enqueue must return the code the mutation
/// calls for (kAudio_ParamError for descriptions that do not describe the buffer,
/// kAudioQueueErr_BufferEmpty for an empty buffer, noErr for what decodes or plays as
/// silence with ConverterError), and what plays must stay finite. A crash is the failure this
/// runs in a process of its own to catch.
///
/// Prints one line per queue: `aac: valid=0x37 offset-past-end=-50x12 ... converter-error=1650549857 finite=yes played=yes unexpected=0`
/// (each mutation's results as code x count); exits 1 if any result was not allowed, a sample not
/// finite, or nothing played.
enum HostileDescriptions {
    enum Mutation: String, CaseIterable {
        case valid
        case offsetPastEnd = "offset-past-end"
        case negativeOffset = "negative-offset"
        case zeroSize = "zero-size"
        case hugeSize = "huge-size"
        case overlapping
        /// More descriptions passed in the call than the buffer was allocated with.
        case moreThanAllocated = "more-than-allocated"
        /// inNumPacketDescs larger than the buffer has bytes (no description can be valid):
        /// refused before the descriptions are read, so a short array is never overrun.
        case countBeyondBytes = "count-beyond-bytes"
        case noDescriptions = "no-descriptions"
        case wrongVariableFrames = "wrong-variable-frames"
        case hugeVariableFrames = "huge-variable-frames"
        case emptyBuffer = "empty-buffer"
        case mangledData = "mangled-data"
        /// The buffer's own mPacketDescriptionCount above its capacity (0/NULL in the call).
        case ownCountOverCapacity = "own-count-over-capacity"
        case byteSizeOverCapacity = "byte-size-over-capacity"

        /// The results the reference allows for this mutation.
        var allowed: Set<OSStatus> {
            switch self {
            case .valid, .overlapping, .moreThanAllocated, .wrongVariableFrames, .mangledData, .ownCountOverCapacity: [noErr]
            case .offsetPastEnd, .negativeOffset, .zeroSize, .hugeSize, .countBeyondBytes, .noDescriptions, .hugeVariableFrames,
                 .byteSizeOverCapacity: [kAudio_ParamError]
            case .emptyBuffer: [kAudioQueueErr_BufferEmpty]
            }
        }
    }

    struct Source {
        let name: String
        let format: AudioStreamBasicDescription
        let cookie: [UInt8]
        let packets: [[UInt8]]
    }

    static func run(seed: UInt64, iterations: Int, directory: String) -> Bool {
        var clean = true
        for source in sources(in: directory) {
            clean = fuzz(source, seed: seed, iterations: iterations) && clean
        }
        return clean
    }

    /// The packets of an AAC .m4a (AudioCodec's encoder) and an MP3 (libsndfile's LAME), read
    /// back through Audio File Services.
    static func sources(in directory: String) -> [Source] {
        let m4a = "\(directory)/descriptions.m4a", mp3 = "\(directory)/descriptions.mp3"
        SeedFiles.writePackets(m4a, type: kAudioFileM4AType, formatID: kAudioFormatMPEG4AAC, rate: 48000, channels: 2, frames: 48000)
        SeedFiles.write(mp3, type: kAudioFileMP3Type, format: SeedFiles.format(rate: 48000, channels: 2, bits: 16), frames: 48000)
        return [("aac", m4a), ("mp3", mp3)].compactMap { name, path in
            var file: AudioFileID?
            guard AudioFileOpenURL(URL(fileURLWithPath: path), .readPermission, 0, &file) == noErr, let file else {
                print("\(name): cannot open \(path)")
                return nil
            }
            defer { AudioFileClose(file) }
            var format = AudioStreamBasicDescription()
            var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
            AudioFileGetProperty(file, kAudioFilePropertyDataFormat, &size, &format)
            var cookie: [UInt8] = []
            size = 0
            if AudioFileGetPropertyInfo(file, kAudioFilePropertyMagicCookieData, &size, nil) == noErr, size > 0 {
                cookie = [UInt8](repeating: 0, count: Int(size))
                AudioFileGetProperty(file, kAudioFilePropertyMagicCookieData, &size, &cookie)
            }
            var count: UInt64 = 0
            var largest: UInt32 = 0
            size = 8
            AudioFileGetProperty(file, kAudioFilePropertyAudioDataPacketCount, &size, &count)
            size = 4
            AudioFileGetProperty(file, kAudioFilePropertyMaximumPacketSize, &size, &largest)
            var data = [UInt8](repeating: 0, count: Int(largest) * Int(count))
            var descriptions = [AudioStreamPacketDescription](repeating: .init(), count: Int(count))
            var bytes = UInt32(data.count)
            var packets = UInt32(count)
            AudioFileReadPacketData(file, false, &bytes, &descriptions, 0, &packets, &data)
            let list = descriptions.prefix(Int(packets)).map { Array(data[Int($0.mStartOffset)..<Int($0.mStartOffset) + Int($0.mDataByteSize)]) }
            guard format.mFormatID != kAudioFormatLinearPCM, list.count > 8 else {
                print("\(name): \(path) did not open as packets")
                return nil
            }
            return Source(name: name, format: format, cookie: cookie, packets: list)
        }
    }

    /// Buffers of `packetsPerBuffer` packets, allocated with that many descriptions.
    static let packetsPerBuffer = 6

    /// The buffers the queue has given back through its callback.
    final class Pool: Sendable {
        let returned = Mutex<[UInt]>([])

        func take() -> AudioQueueBufferRef? {
            returned.withLock { $0.popLast() }.flatMap { AudioQueueBufferRef(bitPattern: $0) }
        }
    }

    static let callback: AudioQueueOutputCallback = { user, _, buffer in
        Unmanaged<Pool>.fromOpaque(user!).takeUnretainedValue().returned.withLock { $0.append(UInt(bitPattern: buffer)) }
    }

    private static func fuzz(_ source: Source, seed: UInt64, iterations: Int) -> Bool {
        var random = SplitMix64(seed: seed ^ UInt64(source.format.mFormatID))
        let driver = ManualDriver(periodFrames: 256)
        let pool = Pool()
        var tally: [String: [OSStatus: Int]] = [:]
        var unexpected: [String] = []
        var finite = true
        var converterError: UInt32 = 0
        let play = { () -> Void in
            var format = source.format
            var queue: AudioQueueRef?
            let created = AudioQueueNewOutput(&format, callback, Unmanaged.passUnretained(pool).toOpaque(), nil, nil, 0, &queue,
                                              device: driver)
            guard created == noErr, let queue else {
                unexpected.append("new=\(created)")
                return
            }
            defer { AudioQueueDispose(queue, true) }
            if !source.cookie.isEmpty {
                AudioQueueSetProperty(queue, kAudioQueueProperty_MagicCookie, source.cookie, UInt32(source.cookie.count))
            }
            let largest = source.packets.map(\.count).max() ?? 1
            for _ in 0..<4 {
                var buffer: AudioQueueBufferRef?
                guard AudioQueueAllocateBufferWithPacketDescriptions(queue, UInt32(largest * packetsPerBuffer), UInt32(packetsPerBuffer),
                                                                     &buffer) == noErr, let buffer else { continue }
                pool.returned.withLock { $0.append(UInt(bitPattern: buffer)) }
            }
            driver.startRecordingPlayback()
            AudioQueueStart(queue, nil)
            var next = 0
            for iteration in 0..<iterations {
                // Play until the queue gives a buffer back (it does once it has taken its data).
                var buffer = pool.take()
                var cycles = 0
                while buffer == nil, cycles < 2000 {
                    driver.run(cycles: 1)
                    cycles += 1
                    buffer = pool.take()
                }
                guard let buffer else {
                    unexpected.append("\(iteration):no-buffer-back")
                    break
                }
                let mutation = Mutation.allCases[Int(random.next() % UInt64(Mutation.allCases.count))]
                let status = enqueue(mutation, source: source, buffer: buffer, from: &next, random: &random, queue: queue)
                tally[mutation.rawValue, default: [:]][status, default: 0] += 1
                if !mutation.allowed.contains(status) { unexpected.append("\(iteration):\(mutation.rawValue)=\(status)") }
                if status != noErr { pool.returned.withLock { $0.append(UInt(bitPattern: buffer)) } }
            }
            driver.run(cycles: 200)
            var size = UInt32(4)
            AudioQueueGetProperty(queue, kAudioQueueProperty_ConverterError, &converterError, &size)
        }
        play()
        var peak: Float = 0
        for port in 0..<Int(source.format.mChannelsPerFrame) {
            let samples = driver.recordedPlayback(port: port).samples
            finite = finite && samples.allSatisfy { $0.isFinite && abs($0) < 64 }
            peak = max(peak, samples.reduce(0) { max($0, abs($1)) })
        }
        let counts = Mutation.allCases.map { mutation in
            let codes = (tally[mutation.rawValue] ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)x\($0.value)" }.joined(separator: ",")
            return "\(mutation.rawValue)=\(codes.isEmpty ? "-" : codes)"
        }
        print("\(source.name): \(counts.joined(separator: " ")) converter-error=\(converterError) finite=\(finite ? "yes" : "no") played=\(peak > 0.01 ? "yes" : "no")"
              + " unexpected=\(unexpected.count) \(unexpected.prefix(5).joined(separator: " "))")
        fflush(nil)
        return unexpected.isEmpty && finite && peak > 0.01
    }

    /// Fills `buffer` with the next packets, applies `mutation` and enqueues it.
    private static func enqueue(_ mutation: Mutation, source: Source, buffer: AudioQueueBufferRef, from next: inout Int,
                                random: inout SplitMix64, queue: AudioQueueRef) -> OSStatus {
        let count = 1 + Int(random.next() % UInt64(packetsPerBuffer))
        var descriptions: [AudioStreamPacketDescription] = []
        var offset = 0
        let data = buffer.pointee.mAudioData.assumingMemoryBound(to: UInt8.self)
        for _ in 0..<count {
            let packet = source.packets[next % source.packets.count]
            next += 1
            packet.withUnsafeBytes { (data + offset).update(from: $0.bindMemory(to: UInt8.self).baseAddress!, count: packet.count) }
            descriptions.append(AudioStreamPacketDescription(mStartOffset: Int64(offset), mVariableFramesInPacket: 0,
                                                             mDataByteSize: UInt32(packet.count)))
            offset += packet.count
        }
        buffer.pointee.mAudioDataByteSize = UInt32(offset)
        buffer.pointee.mPacketDescriptionCount = 0
        let victim = Int(random.next() % UInt64(count))
        let byteSize = Int64(offset)
        switch mutation {
        case .valid: break
        case .offsetPastEnd:
            descriptions[victim].mStartOffset = byteSize + Int64(random.next() % 100_000)
        case .negativeOffset:
            descriptions[victim].mStartOffset = -1 - Int64(random.next() % (1 << 40))
        case .zeroSize:
            descriptions[victim].mDataByteSize = 0
        case .hugeSize:
            descriptions[victim].mDataByteSize = UInt32.max - UInt32(random.next() % 1000)
        case .overlapping:
            descriptions[victim].mStartOffset = 0
            descriptions[victim].mDataByteSize = min(descriptions[victim].mDataByteSize, UInt32(offset))
        case .moreThanAllocated:
            // Every packet again as 1-byte tails of the data: valid ranges, more than the capacity.
            for index in 0..<(packetsPerBuffer + 3) {
                descriptions.append(AudioStreamPacketDescription(mStartOffset: Int64(index % offset), mVariableFramesInPacket: 0,
                                                                 mDataByteSize: 1))
            }
        case .countBeyondBytes:
            return AudioQueueEnqueueBuffer(queue, buffer, UInt32(offset + 1 + Int(random.next() % 1_000_000)), descriptions)
        case .noDescriptions:
            return AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
        case .wrongVariableFrames:
            descriptions[victim].mVariableFramesInPacket = UInt32(random.next() % 5000)
        case .hugeVariableFrames:
            descriptions[victim].mVariableFramesInPacket = UInt32(1 << 21) + UInt32(random.next() % 1000)
        case .emptyBuffer:
            buffer.pointee.mAudioDataByteSize = 0
        case .mangledData:
            for _ in 0..<(1 + Int(random.next() % 16)) { data[Int(random.next() % UInt64(offset))] = UInt8(truncatingIfNeeded: random.next()) }
        case .ownCountOverCapacity:
            let own = buffer.pointee.mPacketDescriptions!
            for (index, description) in descriptions.enumerated() { own[index] = description }
            buffer.pointee.mPacketDescriptionCount = buffer.pointee.mPacketDescriptionCapacity + 1 + UInt32(random.next() % 100_000)
            // The buffer's own descriptions beyond `count` are stale or zero: clamped to the
            // capacity, and those past the packets written describe bytes still in range.
            for index in count..<Int(buffer.pointee.mPacketDescriptionCapacity) {
                own[index] = AudioStreamPacketDescription(mStartOffset: 0, mVariableFramesInPacket: 0, mDataByteSize: descriptions[0].mDataByteSize)
            }
            return AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
        case .byteSizeOverCapacity:
            buffer.pointee.mAudioDataByteSize = buffer.pointee.mAudioDataBytesCapacity + 1 + UInt32(random.next() % 1000)
        }
        return AudioQueueEnqueueBuffer(queue, buffer, UInt32(descriptions.count), descriptions)
    }
}
