#!/bin/bash
#BSUB -W 1:30
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
