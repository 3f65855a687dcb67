import AudioToolbox
import FoundationEssentials
import Glibc

// The two ends of `jaq convert`: an ExtAudioFile read in a float client format and one
// written from it. Every failure is one line naming the file.

/// Interleaved float frames read from IN.
struct ConvertChunk {
    let samples: UnsafeMutableRawPointer
    let frames: Int
}

/// IN, read through ExtAudioFile.
final class ConvertReader {
    let path: String
    let file: ExtAudioFileRef
    let fileFormat: AudioStreamBasicDescription
    /// Frames of IN (priming and padding excluded).
    private(set) var length: Int64 = 0
    private var client = AudioStreamBasicDescription()
    private var buffer: UnsafeMutableRawPointer?
    private let chunkFrames = 8192

    init(path: String) throws {
        self.path = path
        var opened: ExtAudioFileRef?
        let status = ExtAudioFileOpenURL(URL(fileURLWithPath: path), &opened)
        guard status == noErr, let opened else { throw CLIError("\(path): cannot open it: \(describe(status, file: true))") }
        file = opened
        var format = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        ExtAudioFileGetProperty(opened, kExtAudioFileProperty_FileDataFormat, &size, &format)
        fileFormat = format
    }

    deinit {
        ExtAudioFileDispose(file)
        buffer?.deallocate()
    }

    /// Reads in `format` from now on: a rate or channel count the converter cannot reach is refused here.
    func setClient(_ format: AudioStreamBasicDescription) throws {
        var format = format
        let status = ExtAudioFileSetProperty(file, kExtAudioFileProperty_ClientDataFormat, UInt32(MemoryLayout<AudioStreamBasicDescription>.size), &format)
        guard status == noErr else {
            throw CLIError("\(path): cannot convert \(Int(fileFormat.mSampleRate)) Hz, \(fileFormat.mChannelsPerFrame) channel\(fileFormat.mChannelsPerFrame == 1 ? "" : "s") to "
                           + "\(Int(format.mSampleRate)) Hz, \(format.mChannelsPerFrame) channel\(format.mChannelsPerFrame == 1 ? "" : "s"): "
                           + (rateConversionUnavailable(status, from: fileFormat.mSampleRate, to: format.mSampleRate) ?? describe(status, file: false)))
        }
        client = format
        var size = UInt32(8)
        ExtAudioFileGetProperty(file, kExtAudioFileProperty_FileLengthFrames, &size, &length)
        buffer?.deallocate()
        buffer = .allocate(byteCount: chunkFrames * Int(format.mBytesPerFrame), alignment: 16)
    }

    /// kAudioConverterSampleRateConverterQuality of the converter, when the client's rate is not the file's.
    func setRateConverterQuality(_ quality: UInt32) throws {
        guard client.mSampleRate != fileFormat.mSampleRate else { return }
        var converter: AudioConverterRef?
        var size = UInt32(MemoryLayout<AudioConverterRef?>.size)
        var quality = quality
        var status = ExtAudioFileGetProperty(file, kExtAudioFileProperty_AudioConverter, &size, &converter)
        if status == noErr, let converter {
            status = AudioConverterSetProperty(converter, kAudioConverterSampleRateConverterQuality, 4, &quality)
        }
        guard status == noErr else { throw CLIError("\(path): --src-quality \(quality): \(describe(status, file: false))") }
    }

    /// The next frames, nil at the end.
    func next() throws -> ConvertChunk? {
        guard let buffer else { return nil }
        var frames = UInt32(chunkFrames)
        var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: client.mChannelsPerFrame,
                                                                            mDataByteSize: frames * client.mBytesPerFrame, mData: buffer))
        let status = ExtAudioFileRead(file, &frames, &list)
        guard status == noErr else { throw CLIError("\(path): cannot read it: \(describe(status, file: true))") }
        return frames == 0 ? nil : ConvertChunk(samples: buffer, frames: Int(frames))
    }
}

/// OUT, written through ExtAudioFile.
final class ConvertWriter {
    let path: String
    private var file: ExtAudioFileRef?
    private let client: AudioStreamBasicDescription

    init(path: String, type: OutputFileType, format: AudioStreamBasicDescription, client: AudioStreamBasicDescription, bitRate: Int?) throws {
        self.path = path
        self.client = client
        var format = format
        var created: ExtAudioFileRef?
        let status = ExtAudioFileCreateWithURL(URL(fileURLWithPath: path), type.id, &format, nil, AudioFileFlags.eraseFile.rawValue, &created)
        guard status == noErr, let created else {
            throw CLIError("\(path): cannot create a \(type.name) file of \(fourCharacterCode(format.mFormatID)): \(describe(status, file: false))")
        }
        file = created
        var clientFormat = client
        let set = ExtAudioFileSetProperty(created, kExtAudioFileProperty_ClientDataFormat, UInt32(MemoryLayout<AudioStreamBasicDescription>.size), &clientFormat)
        guard set == noErr else { throw fail("cannot encode to it", set) }
        if let bitRate { try setBitRate(bitRate, created) }
    }

    private func setBitRate(_ bitRate: Int, _ file: ExtAudioFileRef) throws {
        var converter: AudioConverterRef?
        var size = UInt32(MemoryLayout<AudioConverterRef?>.size)
        let got = ExtAudioFileGetProperty(file, kExtAudioFileProperty_AudioConverter, &size, &converter)
        guard got == noErr, let converter else { throw fail("no encoder for -b", got == noErr ? kAudio_ParamError : got) }
        var rate = UInt32(clamping: bitRate)
        let status = AudioConverterSetProperty(converter, kAudioConverterEncodeBitRate, 4, &rate)
        guard status == noErr else { throw fail("-b \(bitRate): the encoder refuses it", status) }
        var config: UnsafeRawPointer? = nil
        let resync = ExtAudioFileSetProperty(file, kExtAudioFileProperty_ConverterConfig, UInt32(MemoryLayout<UnsafeRawPointer?>.size), &config)
        guard resync == noErr else { throw fail("-b \(bitRate)", resync) }
    }

    /// Disposes the half-made file (removing it) and gives the error to throw.
    private func fail(_ what: String, _ status: OSStatus) -> CLIError {
        if let file { ExtAudioFileDispose(file) }
        file = nil
        try? FileManager.default.removeItem(atPath: path)
        return CLIError("\(path): \(what): \(describe(status, file: false))")
    }

    deinit { if let file { ExtAudioFileDispose(file) } }

    func write(_ chunk: ConvertChunk) throws {
        guard let file else { return }
        var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: client.mChannelsPerFrame,
                                                                            mDataByteSize: UInt32(chunk.frames) * client.mBytesPerFrame, mData: chunk.samples))
        let status = ExtAudioFileWrite(file, UInt32(chunk.frames), &list)
        guard status == noErr else { throw CLIError("\(path): cannot write it: \(describe(status, file: false))") }
    }

    /// Drains the encoder and completes the file.
    func finish() throws {
        guard let file else { return }
        self.file = nil
        let status = ExtAudioFileDispose(file)
        guard status == noErr else { throw CLIError("\(path): cannot complete it: \(describe(status, file: false))") }
    }
}
