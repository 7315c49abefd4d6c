#!/bin/bash
#BSUB -q debug
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
