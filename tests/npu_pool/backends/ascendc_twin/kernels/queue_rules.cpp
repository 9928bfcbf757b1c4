// The queue rules, one case each (tiling n[0] picks it): even cases are what the device accepts,
// odd cases what it refuses. tests/npu_pool/backends/ascendc_twin/test_queue_rules.py maps them to the rules.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    const int64_t which = ReadTiling(tiling).n[0];
    GlobalTensor<float> aGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> in, other, shallow;  // shallow: depth 1 over two buffers
    TQue<TPosition::VECIN, 2> two;
    pipe.InitBuffer(in, 1, 256);
    pipe.InitBuffer(other, 1, 256);
    pipe.InitBuffer(shallow, 2, 256);
    pipe.InitBuffer(two, 2, 256);
    LocalTensor<float> x = in.AllocTensor<float>();
    switch (which) {
        case 0:  // free after compute, never enqueued: the device's release accepts it
            DataCopy(x, aGm, 64);
            SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
            WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
            Muls(x, x, 2.0f, 64);
            in.FreeTensor(x);
            break;
        case 1:  // free twice: the buffer is already free
            in.FreeTensor(x);
            in.FreeTensor(x);
            break;
        case 2: {  // the full order
            in.EnQue(x);
            LocalTensor<float> y = in.DeQue<float>();
            in.FreeTensor(y);
            break;
        }
        case 3:  // free while it sits in the queue
            in.EnQue(x);
            in.FreeTensor(x);
            break;
        case 4: {  // a second AllocTensor after the first was freed
            in.FreeTensor(x);
            LocalTensor<float> y = in.AllocTensor<float>();
            in.FreeTensor(y);
            break;
        }
        case 5:  // a second AllocTensor while the queue's only buffer is in use
            in.AllocTensor<float>();
            break;
        case 6: {  // depth 2: two tensors in the queue at once
            LocalTensor<float> p = two.AllocTensor<float>(), q = two.AllocTensor<float>();
            two.EnQue(p);
            two.EnQue(q);
            two.FreeTensor(two.DeQue<float>());
            two.FreeTensor(two.DeQue<float>());
            break;
        }
        case 7: {  // depth 1: a second EnQue before a DeQue
            LocalTensor<float> p = shallow.AllocTensor<float>(), q = shallow.AllocTensor<float>();
            shallow.EnQue(p);
            shallow.EnQue(q);
            break;
        }
        case 8: {  // DeQue after an EnQue
            in.EnQue(x);
            in.FreeTensor(in.DeQue<float>());
            break;
        }
        case 9:  // DeQue from an empty queue: the device would wait forever
            in.DeQue<float>();
            break;
        case 10:  // computing on a tensor after DeQue
            in.EnQue(x);
            x = in.DeQue<float>();
            Duplicate(x, 1.0f, 64);
            in.FreeTensor(x);
            break;
        case 11:  // computing on a tensor while it sits in the queue
            in.EnQue(x);
            Duplicate(x, 1.0f, 64);
            break;
        case 12:  // free through the queue that allocated it
            in.FreeTensor(x);
            break;
        case 13:  // free through another queue
            other.FreeTensor(x);
            break;
        case 14:  // use before the free
            Duplicate(x, 1.0f, 64);
            in.FreeTensor(x);
            break;
        case 15:  // use after the free
            in.FreeTensor(x);
            Duplicate(x, 1.0f, 64);
            break;
        case 16: {  // a dequeued tensor back into its queue (the SoftMax sample's copy-out)
            in.EnQue(x);
            LocalTensor<float> y = in.DeQue<float>();
            in.EnQue(y);
            in.FreeTensor(in.DeQue<float>());
            break;
        }
        case 17: {  // EnQue of a tensor already in the queue
            LocalTensor<float> p = two.AllocTensor<float>();
            two.EnQue(p);
            two.EnQue(p);
            break;
        }
    }
}
