#!/bin/bash
#BSUB -cwd /tmp
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
