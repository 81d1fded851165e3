"""A TensorFlow parameter-server job that knows nothing of flexjob: every replica reads
``TF_CONFIG`` (``TFConfigClusterResolver``). The ps and worker replicas serve a
``tf.distribute.Server`` until they are stopped; the chief is the coordinator of a
``ParameterServerStrategy`` that fits ``y = 3x - 2`` on data it makes, checkpointing each epoch
to ``CKPT_DIR`` (argv[1]) and resuming from it after a restart (a ps that dies makes the
coordinator's next step raise; the chief exits 1 and is restarted). It prints
``epoch=<n> loss=<l>`` per epoch and ``final loss=<l>`` when done, then exits 0.

``TF_PS_PAUSE`` (a file path): before each epoch after the first, the chief waits while the file
exists, so a test can kill a ps mid-training at a point it chose.
"""

import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf

EPOCHS = 6
STEPS_PER_EPOCH = 20


def serve(resolver: tf.distribute.cluster_resolver.TFConfigClusterResolver) -> None:
    server = tf.distribute.Server(
        resolver.cluster_spec(),
        job_name=resolver.task_type,
        task_index=resolver.task_id,
        protocol=resolver.rpc_layer or "grpc",
        start=True,
    )
    print(f"serving {resolver.task_type}-{resolver.task_id}", flush=True)
    server.join()


def dataset() -> tf.data.Dataset:
    x = tf.random.stateless_uniform((512, 1), seed=(1, 2), minval=-1.0, maxval=1.0)
    y = 3.0 * x - 2.0
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512, seed=3).repeat().batch(32)


def coordinate(resolver: tf.distribute.cluster_resolver.TFConfigClusterResolver) -> None:
    ckpt_dir = sys.argv[1]
    pause = os.environ.get("TF_PS_PAUSE")
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        w = tf.Variable(0.0)
        b = tf.Variable(0.0)
        epoch = tf.Variable(0, dtype=tf.int64)
        optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)
    ckpt = tf.train.Checkpoint(w=w, b=b, epoch=epoch, optimizer=optimizer)
    manager = tf.train.CheckpointManager(ckpt, ckpt_dir, max_to_keep=1)
    if manager.latest_checkpoint:
        ckpt.restore(manager.latest_checkpoint)
        print(f"restored epoch={int(epoch.numpy())}", flush=True)

    def per_worker_dataset_fn() -> tf.data.Dataset:
        return strategy.distribute_datasets_from_function(lambda _: dataset())

    per_worker = coordinator.create_per_worker_dataset(per_worker_dataset_fn)
    iterator = iter(per_worker)

    @tf.function
    def step(it: object) -> tf.Tensor:
        def fn(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(w * x + b - y))
            grads = tape.gradient(loss, [w, b])
            optimizer.apply_gradients(zip(grads, [w, b], strict=True))
            return loss

        x, y = next(it)
        return strategy.run(fn, args=(x, y))

    loss = float("nan")
    while int(epoch.numpy()) < EPOCHS:
        while pause and int(epoch.numpy()) > 0 and os.path.exists(pause):
            time.sleep(0.2)
        losses = [coordinator.schedule(step, args=(iterator,)) for _ in range(STEPS_PER_EPOCH)]
        coordinator.join()
        loss = float(losses[-1].fetch())
        epoch.assign_add(1)
        manager.save()
        print(f"epoch={int(epoch.numpy())} loss={loss:.3e}", flush=True)
    print(f"final loss={loss:.3e} w={float(w.numpy()):.4f} b={float(b.numpy()):.4f}", flush=True)


def main() -> None:
    print("TF_CONFIG=" + os.environ.get("TF_CONFIG", ""), flush=True)
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if resolver.task_type in ("ps", "worker"):
        serve(resolver)
    elif resolver.task_type == "chief":
        coordinate(resolver)
    else:
        raise SystemExit(f"no role for task type {resolver.task_type!r}")


if __name__ == "__main__":
    main()
