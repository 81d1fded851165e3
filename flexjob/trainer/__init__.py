"""What user training code imports: elastic sampler over master shards, fixed global batch helper,
checkpoints, world info.
"""
